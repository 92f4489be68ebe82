"""Helpers for the export tests: units in a temporary home, exported through the real
`agentctl export`, and the real Kubernetes schemas (kubernetes-validate, offline)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

OLDEST = (1, 31)  # the oldest Kubernetes whose schemas the manifests must pass


@functools.cache
def versions() -> list[str]:
    """Every bundled schema version from OLDEST to the newest, as ``major.minor``."""
    from kubernetes_validate import utils

    found = {tuple(int(p) for p in v.split(".")[:2]) for v in utils.all_versions()}
    return [f"{a}.{b}" for a, b in sorted(found) if (a, b) >= OLDEST]


def strict_errors(documents: list[dict[str, Any]]) -> list[str]:
    """What strict validation against every version in ``versions()`` finds: every error
    of every document, each with the version and the object. The schemas and the way they
    are loaded are kubernetes-validate's (``utils.validate``); the validators are kept, so
    that a test validating dozens of documents does not parse the schemas each time."""
    out = []
    for version in versions():
        for doc in documents:
            where = f"{version} {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            try:
                validator = _validator(version, str(doc["kind"]), str(doc["apiVersion"]))
            except FileNotFoundError:  # the CLI only warns about an unknown kind: we fail
                out.append(f"{where}: no schema for {doc.get('apiVersion')} {doc.get('kind')}")
                continue
            for error in validator.iter_errors(doc):
                out.append(f"{where}: {'.'.join(map(str, error.path))}: {error.message}")
    return out


@functools.cache
def _validator(version: str, kind: str, api_version: str) -> Any:
    import re

    import jsonschema
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    schema_dir = f"kubernetes-json-schema/v{version}.0-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = utils.schema_contents(f"{schema_dir}/{kind.lower()}-{group}.json", version)
    definitions = utils.schema_contents(f"{schema_dir}/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def agentctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``agentctl`` command group, run in this process (click's runner: no
    interpreter to start per call) with AGENTD_HOME=home."""
    from click.testing import CliRunner

    from agentd.cli.agentctl.group import main

    result = CliRunner().invoke(main, list(args), env={"AGENTD_HOME": str(home)})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def git_repo(path: Path, origin: str | None = None, branch: str = "main") -> Path:
    """A git repo with one commit at ``path`` (and ``origin`` as its remote)."""
    path.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, env=env)

    git("init", "-q", "-b", branch)
    (path / "README.md").write_text("work\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "first")
    if origin:
        git("remote", "add", "origin", origin)
    return path
