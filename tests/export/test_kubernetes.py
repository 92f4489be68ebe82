"""`agentctl export kubernetes`: the manifests pass the real Kubernetes schemas, strict,
for 1.31 through the newest (kubernetes-validate, offline), for every example unit and
the edge cases; and agentd's own checks catch what the schemas cannot."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentd.export import checks, kubernetes, podfailure
from agentd.export.kubernetes import label_value, object_name
from tests.export.kube import (
    agentctl,
    by_kind,
    documents,
    git_repo,
    strict_errors,
    versions,
)
from tests.support import agentctl as agentctl_real
from tests.support import fake, write_unit

REPO = Path(__file__).resolve().parents[2]
ORIGIN = "https://git.example.com/team/shop.git"


@pytest.fixture
def work(home: Path) -> Path:
    return git_repo(home / "work", ORIGIN, branch="cart")


def _export(home: Path, *args: str) -> list[dict[str, Any]]:
    res = agentctl(home, "export", "kubernetes", *args)
    assert res.returncode == 0, res.stderr
    return documents(res.stdout)


def _job(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [job] = by_kind(docs, "Job")
    return job


def test_the_schemas_cover_1_31_to_the_newest(home: Path, work: Path) -> None:
    import kubernetes_validate
    from kubernetes_validate import utils

    found = versions()
    assert found[0] == "1.31" and len(found) >= 7, found  # 1.37 when this was written
    assert found[-1] == utils.major_minor(utils.latest_version())
    # strict_errors' kept validators agree with kubernetes-validate's own entry point
    write_unit(home, "cart", {"command": fake("exit:0")})
    docs = _export(home, "cart")
    for version in (found[0], found[-1]):
        for doc in docs:
            assert kubernetes_validate.validate(doc, version, strict=True) == version
    job = copy.deepcopy(_job(docs))
    job["spec"]["template"]["spec"]["restartPolicyy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, found[-1], strict=True)
    assert any("'restartPolicyy' was unexpected" in e for e in strict_errors([job]))


@pytest.mark.slow
def test_every_example_unit_exports_to_valid_manifests(home: Path, work: Path) -> None:
    for example in sorted((REPO / "etc" / "units").glob("*.yaml")):
        raw = yaml.safe_load(example.read_text())
        raw["workdir"] = str(work)
        write_unit(home, example.stem, raw)
    res = agentctl_real(home, "export", "kubernetes", "--all", "--secret", "agentd-keys")
    assert res.returncode == 0, res.stderr
    docs = documents(res.stdout)
    assert sorted(d["kind"] for d in docs) == sorted(
        ["ConfigMap", "PersistentVolumeClaim", "Job"] * 2
    )
    assert strict_errors(docs) == []
    assert checks.problems(docs) == []
    for doc in docs:
        assert doc["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "agentd"
    units = {d["metadata"]["labels"]["agentd.dev/unit"] for d in docs}
    assert units == {"cart-refactor", "shell-loop"}


def test_the_job_runs_agentd_as_the_contract_says(home: Path, work: Path) -> None:
    write_unit(home, "cart", {"command": fake("exit:0"), "stop": {"grace": "40s"}})
    docs = _export(home, "cart", "--namespace", "agents", "--storage-class", "fast-ssd")
    assert strict_errors(docs) == []
    job, [claim], [config] = (
        _job(docs),
        by_kind(docs, "PersistentVolumeClaim"),
        by_kind(docs, "ConfigMap"),
    )
    spec = job["spec"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert spec["podReplacementPolicy"] == "Failed" and spec["backoffLimit"] == 3
    assert spec["podFailurePolicy"] == podfailure.policy()  # the table test's rules
    assert pod["terminationGracePeriodSeconds"] == 40 + kubernetes.MARGIN  # >= stop.grace + margin
    [agent] = pod["containers"]
    assert agent["name"] == "agentd" and agent["command"] == ["agentd", "run", "cart"]
    env = {e["name"]: e.get("value") for e in agent["env"]}
    assert env["AGENTD_HOME"] == "/agentd/home"
    mounts = {m["mountPath"]: m["name"] for m in agent["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    # AGENTD_HOME and the workdir on the PVC; the sockets on an emptyDir of this unit's
    assert (
        volumes[mounts["/agentd"]]["persistentVolumeClaim"]["claimName"]
        == claim["metadata"]["name"]
    )
    assert "emptyDir" in volumes[mounts["/agentd/home/run"]]
    assert mounts["/agentd/home/run"] == "agentd-cart-run"
    assert claim["spec"]["accessModes"] == ["ReadWriteOncePod"]
    assert claim["spec"]["storageClassName"] == "fast-ssd"
    assert {d["metadata"]["namespace"] for d in docs} == {"agents"}
    # the unit file in the ConfigMap: the pod's workdir, nothing of the host's
    text = config["data"]["cart.yaml"]
    assert yaml.safe_load(text)["workdir"] == "/agentd/work" and str(work) not in text
    # the init container clones the workdir's origin on its branch when .git is missing
    [prepare] = pod["initContainers"]
    script = prepare["command"][-1]
    assert "if [ ! -e /agentd/work/.git ]; then" in script
    assert f"git clone --quiet --branch cart -- {ORIGIN} /agentd/work.clone" in script
    assert "install -m 0600 /etc/agentd/unit/cart.yaml" in script
    assert "activeDeadlineSeconds" not in spec  # no session limit: nothing bounds it


def test_secrets_go_by_secret_key_ref_never_into_the_config_map(home: Path, work: Path) -> None:
    key = "sk-ant-api03-" + "q" * 40
    write_unit(
        home,
        "sec",
        {
            "preset": "claude-code",
            "command": fake("exit:0"),
            "env": {"ANTHROPIC_API_KEY": key, "GITHUB_TOKEN": "ghp_" + "x" * 36, "MODE": "fast"},
        },
    )
    refused = agentctl(home, "export", "kubernetes", "sec")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "sets ANTHROPIC_API_KEY, GITHUB_TOKEN: secrets do not go into a ConfigMap" in (
        refused.stderr
    )
    res = agentctl(home, "export", "kubernetes", "sec", "--secret", "agentd-keys")
    assert res.returncode == 0, res.stderr
    assert key not in res.stdout and "ghp_" not in res.stdout
    docs = documents(res.stdout)
    assert strict_errors(docs) == [] and checks.problems(docs) == []
    [agent] = _job(docs)["spec"]["template"]["spec"]["containers"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in agent["env"] if "valueFrom" in e}
    assert refs == {
        "ANTHROPIC_API_KEY": {"name": "agentd-keys", "key": "ANTHROPIC_API_KEY", "optional": False},
        "GITHUB_TOKEN": {"name": "agentd-keys", "key": "GITHUB_TOKEN", "optional": False},
    }
    [config] = by_kind(docs, "ConfigMap")
    unit = yaml.safe_load(config["data"]["sec.yaml"])
    assert unit["env"] == {"MODE": "fast"} and unit["preset"] == "claude-code"


@pytest.mark.parametrize("preset", ["claude-code", "codex", "gemini", "aider"])
def test_each_preset_exports_and_gets_its_api_key_from_the_secret(
    home: Path, work: Path, preset: str
) -> None:
    write_unit(home, f"p-{preset}", {"preset": preset})
    docs = _export(home, f"p-{preset}", "--secret", "keys")
    assert strict_errors(docs) == [] and checks.problems(docs) == []
    [agent] = _job(docs)["spec"]["template"]["spec"]["containers"]
    optional = {e["name"] for e in agent["env"] if "valueFrom" in e}
    expected = {
        "claude-code": {"ANTHROPIC_API_KEY"},
        "codex": {"OPENAI_API_KEY"},
        "gemini": {"GEMINI_API_KEY"},
        "aider": {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
    }[preset]
    assert optional == expected
    without = agentctl(home, "export", "kubernetes", f"p-{preset}")
    assert without.returncode == 0 and "no --secret" in without.stderr


def test_long_and_odd_names_become_valid_distinct_names(home: Path, work: Path) -> None:
    names = ["a" * 64, "Cart_Refactor.v2", "cart-refactor-v2", "x-", "9.lives_"]
    for name in names:
        write_unit(home, name, {"command": fake("exit:0")})
    docs = _export(home, "--all")
    assert strict_errors(docs) == [] and checks.problems(docs) == []
    jobs = by_kind(docs, "Job")
    assert len({j["metadata"]["name"] for j in jobs}) == len(names)  # no two share one
    for job in jobs:
        exact = job["metadata"]["annotations"]["agentd.dev/unit-name"]
        assert len(job["metadata"]["name"]) <= 63
        assert job["spec"]["template"]["spec"]["containers"][0]["command"][-1] == exact
        assert job["metadata"]["labels"]["agentd.dev/unit"] == label_value(exact)
    assert label_value("cart-refactor-v2") == "cart-refactor-v2"  # kept where it can be
    assert object_name("cart-refactor-v2") == "agentd-cart-refactor-v2"
    assert object_name("Cart_Refactor.v2") != object_name("cart-refactor-v2")
    assert len(object_name("a" * 64, "-state")) == 63


def test_a_workdir_without_a_repo_starts_empty_and_says_so(home: Path) -> None:
    (home / "work").mkdir(exist_ok=True)
    write_unit(home, "norepo", {"command": fake("exit:0"), "state": {"dir": str(home / "st")}})
    res = agentctl(home, "export", "kubernetes", "norepo")
    assert res.returncode == 0, res.stderr
    assert "has no git remote to clone: the pod starts in an empty workdir" in res.stderr
    docs = documents(res.stdout)
    assert strict_errors(docs) == []
    [prepare] = _job(docs)["spec"]["template"]["spec"]["initContainers"]
    assert "git clone" not in prepare["command"][-1]
    [config] = by_kind(docs, "ConfigMap")
    assert yaml.safe_load(config["data"]["norepo.yaml"])["state"]["dir"] == "/agentd/state"


def test_the_deadline_comes_from_the_limits_and_the_grace_is_checked(
    home: Path, work: Path
) -> None:
    write_unit(
        home,
        "capped",
        {
            "command": fake("exit:0"),
            "restart": {"max_sessions": 4, "max_delay": "1m"},
            "limits": {"session_timeout": "1h"},
            "stop": {"grace": "20s"},
        },
    )
    spec = _job(_export(home, "capped"))["spec"]
    assert spec["activeDeadlineSeconds"] == 4 * (3600 + 20 + 60) + kubernetes.DEADLINE_SLACK
    assert "activeDeadlineSeconds" not in _job(_export(home, "capped", "--deadline", "0"))["spec"]
    assert _job(_export(home, "capped", "--deadline", "2h"))["spec"]["activeDeadlineSeconds"] == (
        7200
    )
    pod = _job(_export(home, "capped", "--grace", "2m"))["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 120
    short = agentctl(home, "export", "kubernetes", "capped", "--grace", "30s")
    assert short.returncode == 1 and "--grace 30s is too short" in short.stderr
    assert "give at least 35" in short.stderr
    write_unit(
        home,
        "daily",
        {
            "command": fake("exit:0"),
            "restart": {"max_sessions": 4},
            "limits": {"session_timeout": "1h"},
            "budget": {"max_sessions_per_day": 2},
        },
    )
    assert "activeDeadlineSeconds" not in _job(_export(home, "daily"))["spec"]  # days


def test_out_writes_one_file_per_unit_and_a_kustomization(home: Path, work: Path) -> None:
    out = home / "k8s"
    out.mkdir()
    (out / "kustomization.yaml").write_text("resources: [other.yaml]\n")
    for name in ("one", "two"):
        write_unit(home, name, {"command": fake("exit:0")})
    res = agentctl(home, "export", "kubernetes", "one", "two", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert f"next: kubectl apply -k {out}" in res.stdout
    kust = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kust["kind"] == "Kustomization"
    assert kust["resources"] == ["one.yaml", "other.yaml", "two.yaml"]  # kept what was there
    for name in ("one", "two"):
        docs = documents((out / f"{name}.yaml").read_text())
        assert [d["kind"] for d in docs] == ["ConfigMap", "PersistentVolumeClaim", "Job"]
        assert strict_errors(docs) == []
    if shutil.which("kubectl"):  # not on these machines; where it is, kustomize must agree
        import subprocess

        built = subprocess.run(["kubectl", "kustomize", str(out)], capture_output=True, text=True)
        assert built.returncode == 0 or "other.yaml" in built.stderr, built.stderr


def test_an_invalid_unit_stops_the_export_and_nothing_is_written(home: Path, work: Path) -> None:
    write_unit(home, "good", {"command": fake("exit:0")})
    write_unit(home, "bad", {"command": fake("exit:0"), "restart": {"dealy": "1s"}})
    out = home / "k8s"
    res = agentctl(home, "export", "kubernetes", "--all", "--out", str(out))
    assert res.returncode == 1 and "restart.dealy: unknown key" in res.stderr
    assert "nothing written" in res.stderr and not out.exists()
    both = agentctl(home, "export", "kubernetes", "good", "--all")
    assert both.returncode == 2 and "not both" in both.stderr


# -- what the schemas cannot see -------------------------------------------------------
# Each mutation passes strict schema validation (checked here) and is refused by the API
# server (k8s.io/kubernetes/pkg/apis/*/validation); agentd's checks must refuse it too.


def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    pod: dict[str, Any] = _job(docs)["spec"]["template"]["spec"]
    return pod


MUTATIONS: dict[str, tuple[Any, str]] = {
    "restart-policy-on-failure": (
        lambda d: _pod(d).update(restartPolicy="OnFailure"),
        "must be Never with a podFailurePolicy",
    ),
    "restart-policy-typo": (lambda d: _pod(d).update(restartPolicy="Nevr"), "'Nevr' not one"),
    "access-mode-typo": (
        lambda d: by_kind(d, "PersistentVolumeClaim")[0]["spec"].update(
            accessModes=["ReadWriteOncePodd"]
        ),
        "'ReadWriteOncePodd' not one of",
    ),
    "rwop-with-another-mode": (
        lambda d: by_kind(d, "PersistentVolumeClaim")[0]["spec"].update(
            accessModes=["ReadWriteOncePod", "ReadWriteOnce"]
        ),
        "ReadWriteOncePod must be the only one",
    ),
    "replacement-policy-typo": (
        lambda d: _job(d)["spec"].update(podReplacementPolicy="Sometimes"),
        "'Sometimes' not one of",
    ),
    "exit-code-zero-in": (
        lambda d: _job(d)["spec"]["podFailurePolicy"]["rules"][2]["onExitCodes"].update(
            values=[0, 1, 78]
        ),
        "0 cannot be used with In",
    ),
    "exit-codes-unsorted": (
        lambda d: _job(d)["spec"]["podFailurePolicy"]["rules"][2]["onExitCodes"].update(
            values=[78, 1]
        ),
        "must be unique and ascending",
    ),
    "action-typo": (
        lambda d: _job(d)["spec"]["podFailurePolicy"]["rules"][2].update(action="FailJobb"),
        "'FailJobb' not one of",
    ),
    "rule-names-no-container": (
        lambda d: _job(d)["spec"]["podFailurePolicy"]["rules"][1]["onExitCodes"].update(
            containerName="agent"
        ),
        "'agent' is not a container of the pod",
    ),
    "no-image": (lambda d: _pod(d)["containers"][0].pop("image"), ".image: required"),
    "grace-below-stop-grace": (
        lambda d: _pod(d).update(terminationGracePeriodSeconds=5),
        "leaves agentd less than",
    ),
    "mount-of-no-volume": (
        lambda d: _pod(d)["containers"][0]["volumeMounts"][0].update(name="nope"),
        "'nope' names no volume",
    ),
    "upper-case-name": (
        lambda d: _job(d)["metadata"].update(name="Agentd-Cart"),
        "is not a DNS-1123 name",
    ),
    "label-value-too-long": (
        lambda d: _job(d)["metadata"]["labels"].update({"agentd.dev/unit": "u" * 64}),
        "is not a label value",
    ),
    "secret-value-inline": (
        lambda d: _pod(d)["containers"][0]["env"].append({"name": "API_KEY", "value": "sk-1"}),
        "a secret's value in the manifest",
    ),
    "secret-in-config-map": (
        lambda d: by_kind(d, "ConfigMap")[0]["data"].update(
            {"cart.yaml": "workdir: /agentd/work\nenv: {OPENAI_API_KEY: sk-1}\n"}
        ),
        "env sets OPENAI_API_KEY, a secret",
    ),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    home = tmp_path_factory.mktemp("h")
    git_repo(home / "work", ORIGIN)
    write_unit(home, "cart", {"command": fake("exit:0"), "stop": {"grace": "10s"}})
    return _export(home, "cart")


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_agentds_checks_catch_what_strict_schemas_let_through(
    exported: list[dict[str, Any]], name: str
) -> None:
    docs = exported
    assert checks.problems(docs, min_grace=25) == []
    mutate, says = MUTATIONS[name]
    broken = copy.deepcopy(docs)
    mutate(broken)
    assert broken != docs
    assert strict_errors(broken) == [], "the schemas catch this one themselves"
    found = checks.problems(broken, min_grace=25)
    assert any(says in p for p in found), found


@pytest.mark.slow
def test_names_follow_the_rules_for_any_unit_name() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    unit_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", fullmatch=True)

    @settings(max_examples=150, deadline=None)
    @given(unit_names)
    def check(name: str) -> None:
        for suffix in ("", "-state", "-run"):
            made = object_name(name, suffix)
            assert len(made) <= 63 and checks.DNS_LABEL.fullmatch(made), made
        value = label_value(name)
        assert len(value) <= 63 and re.fullmatch(checks.LABEL_VALUE, value), value

    check()
