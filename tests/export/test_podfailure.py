"""The Job's podFailurePolicy as a table: for every way a pod of an exported unit can end,
what Kubernetes' documented rules make of it (agentd.export.podfailure.verdict), and what
the Job does next. The same rules the exporter writes (`podfailure.RULES`)."""

from __future__ import annotations

from typing import Any

import pytest

from agentd import exitcodes
from agentd.export import podfailure
from agentd.export.podfailure import PodEnd, job_goes_on, verdict

DISRUPTED = {"DisruptionTarget": "True"}

# (how the pod ended, verdict, what the Job does with 0 counted failures so far)
TABLE: list[tuple[str, PodEnd, str, str]] = [
    ("done", PodEnd({"prepare": 0, "agentd": 0}), "Succeeded", "complete"),
    ("interrupted, saved", PodEnd({"prepare": 0, "agentd": 75}), "Ignore", "replace"),
    ("failed or stalled", PodEnd({"prepare": 0, "agentd": 1}), "FailJob", "fail"),
    ("invalid unit", PodEnd({"prepare": 0, "agentd": 78}), "FailJob", "fail"),
    ("evicted, exited 75", PodEnd({"agentd": 75}, DISRUPTED), "Ignore", "replace"),
    ("evicted, SIGKILLed", PodEnd({"agentd": 137}, DISRUPTED), "Ignore", "replace"),
    ("evicted as it failed", PodEnd({"agentd": 1}, DISRUPTED), "Ignore", "replace"),
    ("OOMKilled", PodEnd({"prepare": 0, "agentd": 137}), "Count", "replace"),
    ("agentd died of SIGTERM", PodEnd({"agentd": 143}), "Count", "replace"),
    ("usage error", PodEnd({"agentd": 2}), "Count", "replace"),
    ("the clone failed", PodEnd({"prepare": 128}), "Count", "replace"),
    (
        "a condition, not true",
        PodEnd({"agentd": 137}, {"DisruptionTarget": "False"}),
        "Count",
        "replace",
    ),
    ("exit 75 of another container", PodEnd({"prepare": 75}), "Count", "replace"),
]


@pytest.mark.parametrize(
    ("end", "judged", "then"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE]
)
def test_the_policy_maps_each_end_as_documented(end: PodEnd, judged: str, then: str) -> None:
    rules = podfailure.policy()["rules"]
    assert verdict(rules, end) == judged
    assert job_goes_on(rules, end, counted=0, limit=3) == then


def test_every_exit_status_of_agentd_run_is_mapped() -> None:
    """From the unit's final state to the Job: agentd.exitcodes through the policy."""
    rules = podfailure.policy()["rules"]
    expect = {
        ("done", "exit:0"): "complete",
        ("interrupted", "interrupted:SIGTERM"): "replace",
        ("failed", "exit:3"): "fail",
        ("stalled", "stalled"): "fail",
        ("stopped", "manual"): "fail",
        ("failed", "spawn-error"): "fail",
    }
    for (state, reason), then in expect.items():
        code = exitcodes.for_end(state, reason)
        assert job_goes_on(rules, PodEnd({"agentd": code}), 0, 3) == then, (state, code)


def test_counted_failures_end_the_job_past_the_backoff_limit() -> None:
    rules, oom = podfailure.policy()["rules"], PodEnd({"agentd": 137})
    assert [job_goes_on(rules, oom, n, 3) for n in range(5)] == [
        "replace",
        "replace",
        "replace",
        "fail",
        "fail",
    ]
    interrupted = PodEnd({"agentd": 75})  # never counted, however often
    assert all(job_goes_on(rules, interrupted, n, 3) == "replace" for n in range(10))


# The documented rules themselves, on policies agentd does not write: order, NotIn, exit
# code 0 ignored, containerName unset, a condition's status defaulting to True.
OTHER: list[tuple[list[dict[str, Any]], PodEnd, str]] = [
    (
        [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [75]}}],
        PodEnd({"a": 0, "b": 75}),
        "Count",
    ),
    (
        [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [75]}}],
        PodEnd({"a": 3, "b": 75}),
        "FailJob",
    ),
    (
        [
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
        ],
        PodEnd({"a": 3}),
        "Ignore",
    ),
    (
        [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}],
        PodEnd({"a": 9}, DISRUPTED),
        "Ignore",
    ),
    (
        [
            {
                "action": "Ignore",
                "onExitCodes": {"containerName": "b", "operator": "In", "values": [3]},
            }
        ],
        PodEnd({"a": 3}),
        "Count",
    ),
]


@pytest.mark.parametrize(("rules", "end", "judged"), OTHER)
def test_the_evaluator_follows_kubernetes_documented_rules(
    rules: list[dict[str, Any]], end: PodEnd, judged: str
) -> None:
    assert verdict(rules, end) == judged
