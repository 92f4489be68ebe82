"""``agentctl export kubernetes|slurm``: the files a job engine needs to run a unit
(``agentd.export``). Reads unit files and asks git for the workdir's remote; needs no
daemon, no cluster and no client library."""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from agentd.cli.agentctl.client import fail
from agentd.config.unit import Unit
from agentd.errors import AgentdError
from agentd.paths import Paths


@click.group("export")
def export() -> None:
    """Write what Kubernetes or Slurm needs to run units as jobs.

    Inside the job `agentd run UNIT` runs the unit; its exit status tells the
    engine what to do: 0 done (the job completes), 75 interrupted with the
    state saved (a new pod, or the job requeued: the next run carries on),
    1 and 78 failed or invalid (the job fails).
    """


@export.command("kubernetes")
@click.argument("units", nargs=-1)
@click.option("--all", "all_units", is_flag=True, help="Every unit in the units dir.")
@click.option(
    "--image",
    default=None,
    help="The image with agentd and the agent CLIs (default agentd:VERSION).",
)
@click.option("--namespace", default=None, help="metadata.namespace of every object.")
@click.option("--storage-class", default=None, help="The PVC's storageClassName.")
@click.option("--storage", default=None, help="The PVC's size, a Kubernetes quantity (10Gi).")
@click.option(
    "--secret",
    default=None,
    help="The Secret whose keys (named as the variables) give the API keys and the unit's secrets.",
)
@click.option(
    "--grace",
    default=None,
    help="terminationGracePeriodSeconds (a duration; default stop.grace + 15s, at least 30s).",
)
@click.option(
    "--deadline",
    default=None,
    help="activeDeadlineSeconds (a duration, 0 for none; default: what the unit's limits allow).",
)
@click.option(
    "--repo", default=None, help="The git URL the pod clones (default: the workdir's origin)."
)
@click.option("--branch", default=None, help="The branch it clones (default: the workdir's).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write UNIT.yaml per unit and kustomization.yaml into DIR (default: all to stdout).",
)
def kubernetes(
    units: tuple[str, ...],
    all_units: bool,
    image: str | None,
    namespace: str | None,
    storage_class: str | None,
    storage: str | None,
    secret: str | None,
    grace: str | None,
    deadline: str | None,
    repo: str | None,
    branch: str | None,
    out: Path | None,
) -> None:
    """A ConfigMap, a PersistentVolumeClaim and a batch/v1 Job per UNIT.

    The ConfigMap holds the unit file (its workdir set to the pod's, its
    secret variables taken out); the ReadWriteOncePod PVC holds AGENTD_HOME
    and the workdir, so a new pod carries on where an evicted one stopped;
    the Job runs `agentd run UNIT` in one pod at a time, a new pod after an
    eviction or exit 75, failing on 1 and 78 (podFailurePolicy). Secrets come
    only from --secret, by secretKeyRef. Labels: app.kubernetes.io/managed-by=agentd
    and agentd.dev/unit=UNIT (kubectl get jobs -l agentd.dev/unit=UNIT).
    """
    from agentd.export import kubernetes as k8s

    loaded = _units(units, all_units)
    options = k8s.Options(
        image=image or k8s.DEFAULT_IMAGE,
        namespace=namespace,
        storage_class=storage_class,
        storage=storage or k8s.DEFAULT_STORAGE,
        secret=secret,
        grace=_seconds(grace, "--grace"),
        deadline=_seconds(deadline, "--deadline"),
        branch=branch,
    )
    exported = []
    try:
        for unit, raw in loaded:
            found_repo, found_branch = (repo, branch) if repo else _origin(unit)
            each = dataclasses.replace(options, repo=found_repo, branch=branch or found_branch)
            exported.append(k8s.export(unit, raw, each))
    except AgentdError as exc:  # nothing is written
        fail(str(exc))
    for one in exported:
        for note in one.notes:
            click.echo(f"note: {note}", err=True)
    if out is None:
        sys.stdout.write("---\n".join(one.yaml() for one in exported))
        return
    out.mkdir(parents=True, exist_ok=True)
    names = [f"{one.unit}.yaml" for one in exported]
    for one, name in zip(exported, names, strict=True):
        (out / name).write_text(one.yaml(), encoding="utf-8")
        click.echo(f"wrote {out / name}")
    kustomization = out / "kustomization.yaml"
    listed = _listed(kustomization)
    text = k8s.dump([k8s.kustomization([*listed, *names], namespace)])
    kustomization.write_text(text, encoding="utf-8")
    click.echo(f"wrote {kustomization}\nnext: kubectl apply -k {out}")


@export.command("slurm")
@click.argument("unit")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the script to FILE (default: stdout).",
)
@click.option(
    "--grace",
    default=None,
    help="How long before the time limit Slurm sends SIGTERM (default stop.grace + 30s).",
)
@click.option(
    "--time",
    "time_limit",
    default=None,
    help="sbatch --time (a duration, 0 for the partition's; default: what the limits allow).",
)
def slurm(unit: str, out: Path | None, grace: str | None, time_limit: str | None) -> None:
    """An sbatch script that runs `agentd run UNIT` and requeues itself on exit 75.

    --requeue, --open-mode=append (every run in one output file in the unit's
    logs) and --signal=B:TERM@N: the script passes SIGTERM on to agentd, which
    stops the session gracefully and exits 75; the script then requeues the
    job (only while it still runs: a cancel stays) and the next run carries
    on. It names this agentd and the unit file by absolute path: the compute
    nodes must see both.
    """
    from agentd.export import slurm as sbatch

    [(loaded, _)] = _units((unit,), False)
    paths = Paths.resolve()
    try:
        text = sbatch.script(
            loaded,
            paths,
            agentd=_agentd(),
            env=os.environ,
            lead=_seconds(grace, "--grace"),
            time_limit=_seconds(time_limit, "--time"),
        )
    except AgentdError as exc:
        fail(str(exc))
    # Slurm opens --output before the script runs: in a dir that is missing it is lost
    paths.unit_logs(loaded.name).mkdir(mode=0o700, parents=True, exist_ok=True)
    if out is None:
        sys.stdout.write(text)
        return
    out.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out}\nnext: sbatch {out}")


def _units(names: tuple[str, ...], all_units: bool) -> list[tuple[Unit, dict[str, Any]]]:
    """The units named (or every one in the units dir), loaded and checked, with the
    mapping of each file as written; any that does not load: say why, write nothing."""
    import yaml

    from agentd.config.unitfile import read_unit, resolve_unit_arg, unit_paths
    from agentd.errors import UnitError

    paths = Paths.resolve()
    if all_units == bool(names):
        fail("name the units to export, or give --all (not both)", 2)
    try:
        files = (
            unit_paths(paths.units)
            if all_units
            else [resolve_unit_arg(n, paths.units) for n in names]
        )
    except UnitError as exc:
        fail(str(exc))
    if not files:
        fail(f"no unit files in {paths.units}")
    loaded, bad = [], []
    for path in files:
        try:
            unit, _ = read_unit(path)
        except UnitError as exc:
            bad.append(str(exc))
            continue
        loaded.append((unit, dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})))
    if bad:
        fail(
            "; ".join(bad) + f" ({len(bad)} of {len(files)} unit file(s) invalid; nothing written)"
        )
    return loaded


def _origin(unit: Unit) -> tuple[str | None, str | None]:
    """The workdir's ``origin`` and branch, as git says (None, None: no repo or remote)."""
    from agentd.memory.gitinfo import run_git

    url = (run_git(unit.workdir, "remote", "get-url", "origin") or "").strip()
    if not url:
        return None, None
    branch = (run_git(unit.workdir, "rev-parse", "--abbrev-ref", "HEAD") or "").strip()
    return url, (branch if branch and branch != "HEAD" else None)


def _listed(kustomization: Path) -> list[str]:
    """The resources an existing kustomization.yaml lists (kept beside the new ones)."""
    import yaml

    try:
        data = yaml.safe_load(kustomization.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    resources = data.get("resources") if isinstance(data, dict) else None
    return [str(r) for r in resources] if isinstance(resources, list) else []


def _seconds(value: str | None, flag: str) -> int | None:
    """A duration flag (``45``, ``90s``, ``2h``) in whole seconds, rounded up."""
    if value is None:
        return None
    from agentd.config.convert import parse_duration

    try:
        return math.ceil(parse_duration(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=flag) from None


def _agentd() -> str:
    """This agentd's console script, by absolute path (the job runs the same one)."""
    beside = Path(sys.executable).with_name("agentd")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("agentd") or "agentd"
