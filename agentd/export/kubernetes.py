"""A unit as Kubernetes objects: ConfigMap + PersistentVolumeClaim + batch/v1 Job.

One pod at a time runs ``agentd run UNIT`` (container ``agentd``) with
everything on one ``ReadWriteOncePod`` volume mounted at ``/agentd``
(``podunit``): ``AGENTD_HOME`` (the history, the lifecycle, the session
count) and the workdir with its state dir. A pod that replaces an evicted one
finds them there and carries on. The init container ``prepare`` clones the
workdir's repo when ``/agentd/work/.git`` is missing and installs the unit file
from the ConfigMap into ``AGENTD_HOME/units``. Sockets and this pod's locks
(``AGENTD_HOME/run``) are on an emptyDir: they belong to the pod.

The Job: ``restartPolicy: Never`` (the Job, not the kubelet, decides about a
new pod), ``podFailurePolicy`` from ``podfailure`` (exit 75 and disruptions:
a new pod, not counted; 1 and 78: the Job fails), ``podReplacementPolicy:
Failed`` (no new pod while the old one still terminates: two copies must not
overlap), ``backoffLimit`` for the rest (agentd killed, the clone failed),
``activeDeadlineSeconds`` when the unit's limits bound its run (``deadline``),
and ``terminationGracePeriodSeconds`` of at least ``stop.grace`` + ``MARGIN``,
so agentd ends its session and records it before the kubelet's SIGKILL.

Every object carries ``app.kubernetes.io/managed-by: agentd`` and
``agentd.dev/unit: NAME`` (``label_value``: the unit's name where a label
value may hold it). Secrets reach the agent only by ``secretKeyRef`` into
``--secret``. Needs no cluster and no client library: dicts, dumped as YAML.
``checks.problems`` is run on the result before it is returned.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from agentd import __version__
from agentd.config.unit import Unit
from agentd.errors import AgentdError
from agentd.export import podfailure, podunit

MANAGED_BY = {"app.kubernetes.io/managed-by": "agentd"}
UNIT_LABEL = "agentd.dev/unit"
UNIT_ANNOTATION = "agentd.dev/unit-name"  # the exact name, where the label had to shorten it
DEFAULT_IMAGE = f"agentd:{__version__}"
DEFAULT_STORAGE = "10Gi"
MARGIN = 15  # s beyond stop.grace for agentd to end the session, record it and exit
MIN_GRACE = 30  # Kubernetes' own default terminationGracePeriodSeconds
BACKOFF_LIMIT = 3  # pod failures no rule of the policy matched (agentd itself killed)
DEADLINE_SLACK = 600  # s added to a deadline the unit's limits give: pulls, clones, waits
UID = 1000  # the image's user (etc/container/Containerfile)
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
NAME_MAX = 63  # a Job's name is also a label value (batch.kubernetes.io/job-name)


class ExportError(AgentdError):
    """A unit that cannot be exported as asked (a secret without --secret...)."""


@dataclass(frozen=True)
class Options:
    image: str = DEFAULT_IMAGE
    namespace: str | None = None
    storage_class: str | None = None
    storage: str = DEFAULT_STORAGE
    secret: str | None = None  # the Secret holding the API keys
    grace: int | None = None  # terminationGracePeriodSeconds (None: stop.grace + MARGIN)
    deadline: int | None = None  # activeDeadlineSeconds (None: from the limits; 0: none)
    repo: str | None = None  # what the init container clones into the workdir
    branch: str | None = None


@dataclass(frozen=True)
class Exported:
    unit: str
    documents: list[dict[str, Any]]
    notes: list[str]  # what the person should know (said on stderr)

    def yaml(self) -> str:
        return dump(self.documents)


def object_name(unit: str, suffix: str = "") -> str:
    """``agentd-UNIT`` + ``suffix`` as a DNS-1123 label (at most 63 characters): the
    unit's name lowercased, other characters as ``-``; a name that had to change, or be
    cut, ends in a hash of the unit's, so two units never share one."""
    base = re.sub(r"[^a-z0-9]+", "-", unit.lower()).strip("-")
    name = f"agentd-{base}"
    room = NAME_MAX - len(suffix)
    if base != unit or len(name) > room:
        digest = hashlib.sha256(unit.encode()).hexdigest()[:6]
        name = f"{name[: room - 7].rstrip('-')}-{digest}"
    return name + suffix


def label_value(unit: str) -> str:
    """The unit's name as a label value (63 characters of ``[A-Za-z0-9_.-]``, alphanumeric
    at both ends); a longer or odd name is cut and ends in a hash of it."""
    if len(unit) <= NAME_MAX and _LABEL_VALUE.fullmatch(unit):
        return unit
    digest = hashlib.sha256(unit.encode()).hexdigest()[:6]
    return f"{unit[: NAME_MAX - 7].rstrip('-_.')}-{digest}"


def labels(unit: str) -> dict[str, str]:
    return {**MANAGED_BY, UNIT_LABEL: label_value(unit)}


def grace_for(unit: Unit, asked: int | None) -> int:
    """terminationGracePeriodSeconds: ``asked``, or stop.grace + MARGIN (at least 30 s);
    refused when it leaves agentd less than stop.grace + MARGIN."""
    least = math.ceil(unit.stop.grace) + MARGIN
    if asked is None:
        return max(least, MIN_GRACE)
    if asked < least:
        raise ExportError(
            f"{unit.name}: --grace {asked}s is too short: agentd needs the unit's stop.grace "
            f"({unit.stop.grace:g}s) and {MARGIN}s more to end the session and record it "
            f"before the kubelet's SIGKILL; give at least {least}"
        )
    return asked


def deadline(unit: Unit) -> int | None:
    """The longest the unit's own limits let it run: ``restart.max_sessions`` sessions of
    at most ``limits.session_timeout`` each, their stop grace and the longest backoff
    between them, plus ``DEADLINE_SLACK``. None when they do not bound it (no session
    limit, or a daily budget: such a unit is meant to pause and go on another day)."""
    budget = unit.budget.model_dump()
    sessions, timeout = unit.restart.max_sessions, unit.limits.session_timeout
    if not sessions or not timeout or any(budget.values()):
        return None
    each = timeout + unit.stop.grace + unit.restart.max_delay
    return math.ceil(sessions * each) + DEADLINE_SLACK


def export(unit: Unit, raw: Mapping[str, Any], options: Options) -> Exported:
    """The ConfigMap, PVC and Job of ``unit`` (``raw``: its file's mapping, as written)."""
    from agentd.export import checks

    if not _QUANTITY.fullmatch(options.storage):
        raise ExportError(
            f"--storage {options.storage!r} is not a Kubernetes quantity (e.g. 10Gi, 500Mi)"
        )
    pod = podunit.rewrite(unit, raw)
    notes: list[str] = []
    if pod.secrets and not options.secret:
        raise ExportError(
            f"{unit.name} sets {', '.join(pod.secrets)}: secrets do not go into a ConfigMap; "
            "put them in a Kubernetes Secret (kubectl create secret generic NAME "
            f"--from-literal={pod.secrets[0]}=...) and give --secret NAME"
        )
    if pod.wanted and not options.secret:
        notes.append(
            f"{unit.name}: no --secret, so the agent CLI in its pod gets no "
            f"{' or '.join(pod.wanted)} from a Secret"
        )
    notes.extend(
        f"{unit.name}: its command runs {path}: the image must have it there"
        for path in pod.host_paths
    )
    if options.repo is None:
        notes.append(
            f"{unit.name}: its workdir {unit.workdir} has no git remote to clone: the pod "
            "starts in an empty workdir"
        )
    grace = grace_for(unit, options.grace)
    limit = deadline(unit) if options.deadline is None else (options.deadline or None)
    documents = [
        _configmap(unit.name, pod.text, options),
        _claim(unit.name, options),
        _job(unit, pod, options, grace, limit),
    ]
    found = checks.problems(documents, min_grace=math.ceil(unit.stop.grace) + MARGIN)
    if found:  # agentd's own bug: say it rather than hand the cluster a broken Job
        raise ExportError(f"{unit.name}: the export is broken: " + "; ".join(found))
    return Exported(unit.name, documents, notes)


def _meta(unit: str, name: str, options: Options) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if options.namespace:
        meta["namespace"] = options.namespace
    meta["labels"] = labels(unit)
    meta["annotations"] = {UNIT_ANNOTATION: unit, "agentd.dev/exported-by": f"agentd {__version__}"}
    return meta


def _configmap(unit: str, text: str, options: Options) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(unit, object_name(unit), options),
        "data": {f"{unit}.yaml": text},
    }


def _claim(unit: str, options: Options) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOncePod"],  # one pod at a time, on one node
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": options.storage}},
    }
    if options.storage_class:
        spec["storageClassName"] = options.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(unit, object_name(unit, "-state"), options),
        "spec": spec,
    }


def prepare_script(unit: str, repo: str | None, branch: str | None) -> str:
    """The init container's: clone the repo into the workdir when it has no .git yet
    (into a fresh dir, then copied over, so a state dir already there stays), and
    install the unit file from the ConfigMap, private to agentd's user."""
    work = podunit.WORKDIR
    lines = ["set -eu", f'mkdir -p "$AGENTD_HOME/units" {work}']
    if repo:
        clone = ["git", "clone", "--quiet"]
        if branch:
            clone += ["--branch", branch]
        clone += ["--", repo, f"{work}.clone"]
        lines += [
            f"if [ ! -e {work}/.git ]; then",
            f"  rm -rf {work}.clone",
            "  " + " ".join(shlex.quote(part) for part in clone),
            f"  cp -a {work}.clone/. {work}/",
            f"  rm -rf {work}.clone",
            "fi",
        ]
    source = shlex.quote(f"/etc/agentd/unit/{unit}.yaml")
    target = f'"$AGENTD_HOME/units/"{shlex.quote(unit + ".yaml")}'
    lines.append(f"install -m 0600 {source} {target}")
    return "\n".join(lines) + "\n"


def _env(pod: podunit.PodUnit, options: Options) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "AGENTD_HOME", "value": podunit.HOME_DIR},
        {"name": "HOME", "value": podunit.ROOT},
    ]
    if options.secret:
        for name, optional in [(n, False) for n in pod.secrets] + [(n, True) for n in pod.wanted]:
            ref = {"name": options.secret, "key": name, "optional": optional}
            env.append({"name": name, "valueFrom": {"secretKeyRef": ref}})
    return env


def _job(
    unit: Unit, pod: podunit.PodUnit, options: Options, grace: int, limit: int | None
) -> dict[str, Any]:
    name, run = unit.name, object_name(unit.name, "-run")
    mounts = [{"name": "state", "mountPath": podunit.ROOT}]
    restricted = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    prepare = {
        "name": "prepare",
        "image": options.image,
        "command": ["sh", "-c", prepare_script(name, options.repo, options.branch)],
        "env": [
            {"name": "AGENTD_HOME", "value": podunit.HOME_DIR},
            {"name": "HOME", "value": podunit.ROOT},
        ],
        "volumeMounts": [
            *mounts,
            {"name": "unit", "mountPath": "/etc/agentd/unit", "readOnly": True},
        ],
        "securityContext": restricted,
    }
    agent = {
        "name": podfailure.CONTAINER,
        "image": options.image,
        "command": ["agentd", "run", name],
        "env": _env(pod, options),
        "volumeMounts": [*mounts, {"name": run, "mountPath": podunit.RUN_DIR}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
        "securityContext": restricted,
    }
    spec: dict[str, Any] = {
        "backoffLimit": BACKOFF_LIMIT,
        "podReplacementPolicy": "Failed",
        "podFailurePolicy": podfailure.policy(),
    }
    if limit:
        spec["activeDeadlineSeconds"] = limit
    spec["template"] = {
        "metadata": {"labels": labels(name), "annotations": {UNIT_ANNOTATION: name}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": grace,
            "enableServiceLinks": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": UID,
                "runAsGroup": UID,
                "fsGroup": UID,
                "fsGroupChangePolicy": "OnRootMismatch",
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "initContainers": [prepare],
            "containers": [agent],
            "volumes": [
                {
                    "name": "state",
                    "persistentVolumeClaim": {"claimName": object_name(name, "-state")},
                },
                {"name": "unit", "configMap": {"name": object_name(name), "defaultMode": 0o444}},
                # named after the unit: podman's kube play makes an emptyDir a volume of that
                # name, which two pods would share
                {"name": run, "emptyDir": {"sizeLimit": "64Mi"}},
            ],
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, object_name(name), options),
        "spec": spec,
    }


def kustomization(files: Sequence[str], namespace: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
    }
    if namespace:
        out["namespace"] = namespace
    out["resources"] = sorted(set(files))
    return out


def dump(documents: Sequence[Mapping[str, Any]]) -> str:
    """YAML documents, ``---`` between them, keys in the order written."""

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # no &anchors: each object written out whole

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None  # scripts and unit files as blocks
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return "---\n".join(
        yaml.dump(dict(d), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
        for d in documents
    )
