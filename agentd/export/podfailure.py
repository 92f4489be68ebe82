"""The Job's ``podFailurePolicy``, and how Kubernetes applies one to a pod that ended.

A pod of an exported Job runs ``agentd run UNIT`` in the container ``agentd``;
its exit status (``agentd.exitcodes``) decides what the Job does next:

==========================================  ====================  ===============
the pod ended with                          verdict               the Job
==========================================  ====================  ===============
``agentd`` exit 0 (``done``)                ``Succeeded``         complete
a ``DisruptionTarget`` condition (eviction, ``Ignore``            a new pod, not
preemption, drain), whatever the exit                             counted
``agentd`` exit 75 (interrupted, saved)     ``Ignore``            a new pod, not
                                                                  counted
``agentd`` exit 1 (failed, stalled,         ``FailJob``           failed, at once
stopped) or 78 (invalid unit, command)
anything else (agentd killed: OOM, 137;     ``Count``             a new pod while
the init container failed)                                        ``backoffLimit``
                                                                  lasts
==========================================  ====================  ===============

``verdict`` follows the rules as the Kubernetes documentation states them
("Handling Pod and container failures", batch/v1 ``PodFailurePolicy``): only
a failed pod is judged; the rules are tried in order and the first that
matches decides; ``onExitCodes`` looks at the containers it names (all when
no ``containerName``) and ignores those that exited 0; ``In`` matches when one
exit code is listed, ``NotIn`` when one is not; ``onPodConditions`` matches a
condition of that type whose status is the given one (``True`` by default);
a failure no rule matches counts towards ``backoffLimit``. Pure data and a
pure function: the table test and the podman test use both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentd import exitcodes

CONTAINER = "agentd"  # the container that runs `agentd run`
DISRUPTION = "DisruptionTarget"

RULES: list[dict[str, Any]] = [
    # evicted, preempted, drained: the node or the scheduler ended it, not agentd
    {"action": "Ignore", "onPodConditions": [{"type": DISRUPTION, "status": "True"}]},
    # interrupted by SIGTERM after a graceful stop, its state saved: carry on in a new pod
    {
        "action": "Ignore",
        "onExitCodes": {
            "containerName": CONTAINER,
            "operator": "In",
            "values": [exitcodes.INTERRUPTED],
        },
    },
    # agentd gave up (failed, stalled, stopped) or the unit cannot run as written
    {
        "action": "FailJob",
        "onExitCodes": {
            "containerName": CONTAINER,
            "operator": "In",
            "values": sorted({exitcodes.FAILED, exitcodes.CONFIG}),
        },
    },
]


@dataclass(frozen=True)
class PodEnd:
    """How a pod ended: its containers' exit codes (init containers included, by
    name) and the pod conditions that are ``True`` (or ``status`` given)."""

    exit_codes: Mapping[str, int]
    conditions: Mapping[str, str] = field(default_factory=dict)  # type -> status

    @property
    def failed(self) -> bool:
        return any(code != 0 for code in self.exit_codes.values())


def policy() -> dict[str, Any]:
    """The Job's ``spec.podFailurePolicy`` (a fresh copy)."""
    import copy

    return {"rules": copy.deepcopy(RULES)}


def verdict(rules: Sequence[Mapping[str, Any]], end: PodEnd) -> str:
    """``Succeeded``, or the action of the first rule that matches the failed pod
    (``Ignore``, ``FailJob``, ``FailIndex``, ``Count``), or ``Count`` when none does."""
    if not end.failed:
        return "Succeeded"
    for rule in rules:
        if _matches(rule, end):
            return str(rule["action"])
    return "Count"


def _matches(rule: Mapping[str, Any], end: PodEnd) -> bool:
    codes = rule.get("onExitCodes")
    if codes is not None:
        name = codes.get("containerName")
        seen = [c for n, c in end.exit_codes.items() if c != 0 and (name is None or n == name)]
        values = set(codes["values"])
        if codes["operator"] == "In":
            return any(c in values for c in seen)
        return any(c not in values for c in seen)  # NotIn
    for pattern in rule.get("onPodConditions") or []:
        if end.conditions.get(pattern["type"]) == pattern.get("status", "True"):
            return True
    return False


def job_goes_on(rules: Sequence[Mapping[str, Any]], end: PodEnd, counted: int, limit: int) -> str:
    """What the Job does after ``end``: ``complete``, ``replace`` (a new pod) or ``fail``;
    ``counted`` failures before this one, ``limit`` its ``backoffLimit``."""
    judged = verdict(rules, end)
    if judged == "Succeeded":
        return "complete"
    if judged == "Ignore":
        return "replace"
    if judged in ("FailJob", "FailIndex"):
        return "fail"
    return "replace" if counted + 1 <= limit else "fail"
