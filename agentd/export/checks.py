"""What the Kubernetes API server refuses that its published schemas do not say.

The OpenAPI schemas (``kubernetes-validate --strict``) check types, required
and unknown fields; they carry no enums, no name rules and no cross-field
rules. These are the rules of ``k8s.io/kubernetes/pkg/apis/{core,batch}/
validation`` that the objects ``kubernetes`` writes touch: enum values
(restart policy, access modes, podFailurePolicy actions and operators,
podReplacementPolicy), ``restartPolicy: Never`` with a podFailurePolicy, exit
codes 1-255 (no 0 with ``In``), unique and ascending, a rule's
``containerName`` naming a container, ``ReadWriteOncePod`` alone, names
(DNS-1123, a Job's at most 63), label keys and values, env names, every mount
naming a volume, a container's image. Plus agentd's own: a grace that leaves
agentd its ``stop.grace`` and margin, and no secret-named variable in a
ConfigMap. Pure: documents in, problems out (empty: fine).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from agentd.export.podunit import is_secret

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?")

RESTART_POLICIES = {"Always", "OnFailure", "Never"}
JOB_RESTART_POLICIES = {"OnFailure", "Never"}
ACCESS_MODES = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}
VOLUME_MODES = {"Filesystem", "Block"}
ACTIONS = {"FailJob", "FailIndex", "Ignore", "Count"}
OPERATORS = {"In", "NotIn"}
CONDITION_STATUSES = {"True", "False", "Unknown"}
REPLACEMENT_POLICIES = {"TerminatingOrFailed", "Failed"}
MESSAGE_POLICIES = {"File", "FallbackToLogsOnError"}
PULL_POLICIES = {"Always", "IfNotPresent", "Never"}


def problems(documents: Sequence[Mapping[str, Any]], *, min_grace: int = 0) -> list[str]:
    """Every problem of ``documents``, each ``Kind/name: path: what``."""
    out: list[str] = []
    for doc in documents:
        kind = str(doc.get("kind"))
        meta = doc.get("metadata") or {}
        where = f"{kind}/{meta.get('name')}"
        found = _metadata(meta, name_max=63 if kind == "Job" else 253)
        if kind == "Job":
            found += _job(doc.get("spec") or {}, min_grace)
        elif kind == "PersistentVolumeClaim":
            found += _claim(doc.get("spec") or {})
        elif kind == "ConfigMap":
            found += _configmap(doc.get("data") or {})
        out += [f"{where}: {p}" for p in found]
    return out


def _metadata(meta: Mapping[str, Any], name_max: int) -> list[str]:
    out: list[str] = []
    name = str(meta.get("name", ""))
    if len(name) > name_max or not DNS_SUBDOMAIN.fullmatch(name):
        out.append(f"metadata.name: {name!r} is not a DNS-1123 name of at most {name_max}")
    namespace = meta.get("namespace")
    if namespace is not None and (len(namespace) > 63 or not DNS_LABEL.fullmatch(namespace)):
        out.append(f"metadata.namespace: {namespace!r} is not a DNS-1123 label")
    out += _labels(meta.get("labels") or {}, "metadata.labels")
    return out


def _labels(labels: Mapping[str, Any], path: str) -> list[str]:
    out: list[str] = []
    for key, value in labels.items():
        prefix, _, name = str(key).rpartition("/")
        if (prefix and not DNS_SUBDOMAIN.fullmatch(prefix)) or not (
            len(name) <= 63 and LABEL_NAME.fullmatch(name)
        ):
            out.append(f"{path}: {key!r} is not a label key")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.fullmatch(value):
            out.append(f"{path}.{key}: {value!r} is not a label value")
    return out


def _job(spec: Mapping[str, Any], min_grace: int) -> list[str]:
    out: list[str] = []
    template = spec.get("template") or {}
    pod = template.get("spec") or {}
    restart = pod.get("restartPolicy")
    if restart not in JOB_RESTART_POLICIES:
        out.append(f"spec.template.spec.restartPolicy: {restart!r} not one of Never, OnFailure")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in REPLACEMENT_POLICIES:
        out.append(f"spec.podReplacementPolicy: {replacement!r} not one of {REPLACEMENT_POLICIES}")
    for key in ("backoffLimit", "activeDeadlineSeconds"):
        value = spec.get(key)
        least = 1 if key == "activeDeadlineSeconds" else 0
        if value is not None and (not isinstance(value, int) or value < least):
            out.append(f"spec.{key}: {value!r} must be an integer >= {least}")
    containers = [c.get("name") for c in pod.get("containers") or []]
    inits = [c.get("name") for c in pod.get("initContainers") or []]
    failure = spec.get("podFailurePolicy")
    if failure is not None:
        if restart != "Never":
            out.append("spec.template.spec.restartPolicy: must be Never with a podFailurePolicy")
        for i, rule in enumerate(failure.get("rules") or []):
            out += [
                f"spec.podFailurePolicy.rules[{i}]{p}"
                for p in _rule(rule, set(containers) | set(inits))
            ]
    pod_labels = (template.get("metadata") or {}).get("labels") or {}
    out += _labels(pod_labels, "spec.template.metadata.labels")
    out += [f"spec.template.spec{p}" for p in _pod(pod, min_grace)]
    return out


def _rule(rule: Mapping[str, Any], containers: set[Any]) -> list[str]:
    out: list[str] = []
    action = rule.get("action")
    if action not in ACTIONS:
        out.append(f".action: {action!r} not one of {sorted(ACTIONS)}")
    codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if (codes is None) == (conditions is None):
        out.append(": needs exactly one of onExitCodes, onPodConditions")
    if codes is not None:
        operator, values = codes.get("operator"), codes.get("values") or []
        if operator not in OPERATORS:
            out.append(f".onExitCodes.operator: {operator!r} not one of In, NotIn")
        name = codes.get("containerName")
        if name is not None and name not in containers:
            out.append(f".onExitCodes.containerName: {name!r} is not a container of the pod")
        if not values or len(values) > 255:
            out.append(".onExitCodes.values: between 1 and 255 values")
        if any(not isinstance(v, int) or not 0 <= v <= 255 for v in values):
            out.append(f".onExitCodes.values: {values!r}: exit codes are 0-255")
        if operator == "In" and 0 in values:
            out.append(".onExitCodes.values: 0 cannot be used with In")
        if list(values) != sorted(set(values)):
            out.append(f".onExitCodes.values: {values!r} must be unique and ascending")
    for j, pattern in enumerate(conditions or []):
        if not pattern.get("type"):
            out.append(f".onPodConditions[{j}].type: required")
        status = pattern.get("status", "True")
        if status not in CONDITION_STATUSES:
            out.append(f".onPodConditions[{j}].status: {status!r} not True, False or Unknown")
    return out


def _pod(pod: Mapping[str, Any], min_grace: int) -> list[str]:
    out: list[str] = []
    grace = pod.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < min_grace):
        out.append(
            f".terminationGracePeriodSeconds: {grace!r} leaves agentd less than the {min_grace}s "
            "it needs (stop.grace and a margin)"
        )
    volumes = pod.get("volumes") or []
    names = [v.get("name") for v in volumes]
    for name in names:
        if not isinstance(name, str) or len(name) > 63 or not DNS_LABEL.fullmatch(name):
            out.append(f".volumes: {name!r} is not a DNS-1123 label")
    if len(set(names)) != len(names):
        out.append(f".volumes: names {names!r} repeat")
    for v in volumes:
        claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
        if "persistentVolumeClaim" in v and not claim:
            out.append(f".volumes[{v.get('name')}]: claimName required")
        mode = (v.get("configMap") or {}).get("defaultMode")
        if mode is not None and not 0 <= mode <= 0o777:
            out.append(f".volumes[{v.get('name')}].configMap.defaultMode: {mode!r} not 0-0777")
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for c in pod.get(group) or []:
            out += [f".{group}[{c.get('name')}]{p}" for p in _container(c, set(names))]
            if c.get("name") in seen:
                out.append(f".{group}: the name {c.get('name')!r} repeats")
            seen.add(str(c.get("name")))
    if not pod.get("containers"):
        out.append(".containers: at least one")
    return out


def _container(c: Mapping[str, Any], volumes: set[Any]) -> list[str]:
    out: list[str] = []
    name = c.get("name")
    if not isinstance(name, str) or len(name) > 63 or not DNS_LABEL.fullmatch(name):
        out.append(f".name: {name!r} is not a DNS-1123 label")
    if not c.get("image"):
        out.append(".image: required")
    pull = c.get("imagePullPolicy")
    if pull is not None and pull not in PULL_POLICIES:
        out.append(f".imagePullPolicy: {pull!r} not one of {sorted(PULL_POLICIES)}")
    message = c.get("terminationMessagePolicy")
    if message is not None and message not in MESSAGE_POLICIES:
        out.append(f".terminationMessagePolicy: {message!r} not one of {sorted(MESSAGE_POLICIES)}")
    paths = [m.get("mountPath") for m in c.get("volumeMounts") or []]
    if len(set(paths)) != len(paths):
        out.append(f".volumeMounts: mount paths {paths!r} repeat")
    for m in c.get("volumeMounts") or []:
        if m.get("name") not in volumes:
            out.append(f".volumeMounts: {m.get('name')!r} names no volume of the pod")
        if not str(m.get("mountPath", "")).startswith("/"):
            out.append(f".volumeMounts[{m.get('name')}].mountPath: must be absolute")
    for e in c.get("env") or []:
        if not ENV_NAME.fullmatch(str(e.get("name", ""))):
            out.append(f".env: {e.get('name')!r} is not a valid variable name")
        if "value" in e and "valueFrom" in e:
            out.append(f".env[{e.get('name')}]: value and valueFrom are exclusive")
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref is not None and not (ref.get("name") and CONFIG_KEY.fullmatch(str(ref.get("key")))):
            out.append(f".env[{e.get('name')}].valueFrom.secretKeyRef: needs a name and a key")
        if "value" in e and is_secret(str(e.get("name"))):
            out.append(f".env[{e.get('name')}]: a secret's value in the manifest (secretKeyRef)")
    for key in ("requests", "limits"):
        for resource, amount in ((c.get("resources") or {}).get(key) or {}).items():
            if not QUANTITY.fullmatch(str(amount)):
                out.append(f".resources.{key}.{resource}: {amount!r} is not a quantity")
    return out


def _claim(spec: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    modes = spec.get("accessModes") or []
    if not modes:
        out.append("spec.accessModes: at least one")
    for mode in modes:
        if mode not in ACCESS_MODES:
            out.append(f"spec.accessModes: {mode!r} not one of {sorted(ACCESS_MODES)}")
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        out.append("spec.accessModes: ReadWriteOncePod must be the only one")
    volume_mode = spec.get("volumeMode")
    if volume_mode is not None and volume_mode not in VOLUME_MODES:
        out.append(f"spec.volumeMode: {volume_mode!r} not Filesystem or Block")
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage is None or not QUANTITY.fullmatch(str(storage)):
        out.append(f"spec.resources.requests.storage: {storage!r} is not a quantity")
    cls = spec.get("storageClassName")
    if cls is not None and not DNS_SUBDOMAIN.fullmatch(str(cls)):
        out.append(f"spec.storageClassName: {cls!r} is not a DNS-1123 name")
    return out


def _configmap(data: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key, text in data.items():
        if not CONFIG_KEY.fullmatch(str(key)) or len(str(key)) > 253:
            out.append(f"data: {key!r} is not a valid key")
        try:
            unit = yaml.safe_load(str(text)) if str(key).endswith(".yaml") else None
        except yaml.YAMLError as exc:
            out.append(f"data.{key}: not YAML: {exc}")
            continue
        env = unit.get("env") if isinstance(unit, dict) else None
        for var in env if isinstance(env, dict) else {}:
            if is_secret(str(var)):
                out.append(f"data.{key}: env sets {var}, a secret: it belongs in a Secret")
    return out
