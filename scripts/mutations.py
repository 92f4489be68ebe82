"""The mutations ``scripts/mutate.py`` applies, one at a time: named bugs in core behaviour.

Each names a file, a piece of its text (which must occur exactly once) and
what it becomes, and the tests to run against it: the files or directories
whose tests are about that behaviour (``mutate.py`` says which it ran), so
that a run takes seconds to a minute and not a whole suite. A mutation that
no test can notice because the behaviour does not change is *equivalent*:
listed with the reason, not run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository
    original: str  # must occur exactly once in the file
    mutated: str
    tests: tuple[str, ...]  # what to run (paths relative to the repository)
    equivalent: str = ""  # why no test can notice it; such a mutation is not run


def m(
    name: str, path: str, original: str, mutated: str, *tests: str, equivalent: str = ""
) -> Mutation:
    return Mutation(name, path, original, mutated, tests, equivalent)


SUP = "agentd/supervisor/"
POLICY, TRIGGERS, SERVICE = SUP + "policy.py", SUP + "triggers.py", SUP + "service.py"
ENDING, TREE = "agentd/process/ending.py", "agentd/process/tree.py"
BOOT, INJECT = "agentd/memory/bootstrap/render.py", "agentd/session/inject.py"
# The tests of each layer (policy's are pure and fast; run's start real sessions).
T_POLICY = "tests/supervisor/test_policy.py"
T_RUN = "tests/supervisor/test_run.py"
T_SERVICE = "tests/supervisor/test_service.py"
T_PROC = "tests/process"
T_BOOT = "tests/memory/test_bootstrap.py"
T_CTL = "tests/cli/test_agentctl.py"
T_GATE = "tests/supervisor/test_completion_gate.py"
T_REFUSAL = "tests/supervisor/test_refusal.py"
T_WORKTREE = "tests/daemon/test_worktrees.py"

MUTATIONS = [
    # Only a test that runs `python -m agentd.cli run` sees this message: if it
    # survives, the subprocesses import the installed package, not the copy.
    m(
        "canary",
        "agentd/cli/agentd/run.py",
        "after {ran} session(s){which} in",
        "after {ran} sessions{which} in",
        T_RUN,
    ),
    # --- the rows of issue 14 ---
    m(
        "session-timeout-never-armed",
        TRIGGERS,
        "        if limits.session_timeout:\n",
        "        if False:\n",
        T_RUN,
    ),
    m(
        "tree-walk-stops-at-depth-1",
        TREE,
        "todo.extend(children.get(pid, ()))",
        "todo.extend(children.get(pid, ()) if pid in roots else ())",
        T_PROC,
    ),
    m(
        "signal-skips-depth-2",
        ENDING,
        "        ordered = order_bottom_up(procs)\n",
        "        procs = list(procs)\n"
        "        up = {p.pid: p.info.get('ppid') for p in procs}\n"
        "        ordered = [p for p in order_bottom_up(procs) if up.get(up.get(p.pid)) not in up]\n",  # noqa: E501 (the code, verbatim)
        T_PROC,
    ),
    m(
        "killpg-first-removed",
        ENDING,
        "        ending.signal_group_first(sig)\n",
        "        pass\n",
        T_PROC,
    ),
    m(
        "left-group-not-signalled",
        ENDING,
        "            if proctable.os_id(os.getpgid, proc.pid) != self._sid:\n",
        "            if False:\n",
        T_PROC,
    ),
    m(
        "state-changed-always-true",
        SERVICE,
        "state_changed=state_after != state_before or state_after is None,",
        "state_changed=True,",
        T_SERVICE,
    ),
    m(
        "restarts-not-counted",
        SERVICE,
        "                reason = decision.reason\n                self.restarts += 1\n",
        "                reason = decision.reason\n",
        T_SERVICE,
        T_CTL,
    ),
    m(
        "no-drain-before-exit",
        "agentd/session/session.py",
        "        self._close_pidfd()\n        self._drain(FINAL_DRAIN_BYTES)\n"
        "        self.exited.set_result(None)\n",
        "        self._close_pidfd()\n        self.exited.set_result(None)\n",
        "tests/session",
        T_RUN,
        T_CTL,
    ),
    m(
        "burst-one-early",
        POLICY,
        "if failures > self.restart.burst:",
        "if failures >= self.restart.burst:",
        T_POLICY,
    ),
    m(
        "burst-one-late",
        POLICY,
        "if failures > self.restart.burst:",
        "if failures > self.restart.burst + 1:",
        T_POLICY,
    ),
    m(
        "min-uptime-ignored",
        POLICY,
        "return end.uptime < self.restart.min_uptime or _quick_run(end, before)",
        "return _quick_run(end, before)",
        T_POLICY,
    ),
    m("max-sessions-ignored", POLICY, "if cap and end.session >= cap:", "if False:", T_POLICY),
    m(
        "idle-never-armed",
        TRIGGERS,
        "        if limits.idle_timeout:\n",
        "        if False:\n",
        T_RUN,
    ),
    m("context-limit-ignored", TRIGGERS, "if limit and tokens >= limit:", "if False:", T_RUN),
    # --- weak spots the issue found reading the tests ---
    m(
        "sentinel-pattern-compiled-per-use",
        "agentd/config/sections.py",
        "        if self._pattern is None:  # only after model_construct(), which skips validation\n"  # noqa: E501 (the code, verbatim)
        "            self._pattern = compile_regex(self.match)\n        return self._pattern\n",
        "        return compile_regex(self.match)\n",
        "tests/config/test_unit.py",
    ),
    m(
        "backoff-does-not-double",
        POLICY,
        "min(self.restart.delay * 2 ** (in_a_row - 1), self.restart.max_delay)",
        "min(self.restart.delay, self.restart.max_delay)",
        T_POLICY,
        T_RUN,
    ),
    m(
        "matcher-never-hits",
        "agentd/terminal/matcher.py",
        "        hits, self._hits = self._hits, []\n",
        "        hits, self._hits = [], []\n",
        "tests/terminal/test_matcher_props.py",
    ),
    # --- the restart policy, branch by branch ---
    m(
        "policy-stop-action",
        POLICY,
        '        if end.action == "stop":\n',
        "        if False:\n",
        T_POLICY,
    ),
    m(
        "policy-complete",
        POLICY,
        '        if end.complete is not None:\n            return Decision(\n                "done"',  # noqa: E501
        '        if False:\n            return Decision(\n                "done"',
        T_POLICY,
    ),
    m(
        "policy-pause-action",
        POLICY,
        "        if end.waits:\n",
        "        if False:\n",
        T_POLICY,
    ),
    m(
        "policy-success-code",
        POLICY,
        "        if end.trigger is None and end.exit_code in self.restart.success_codes:\n"
        '            return Decision("done"',
        '        if False:\n            return Decision("done"',
        T_POLICY,
    ),
    m(
        "policy-spawn-error-retried",
        POLICY,
        "if end.spawn_error is not None and not end.spawn_retry:",
        "if end.spawn_error is not None and False:",
        T_POLICY,
    ),
    m(
        "policy-on-failure-ignored",
        POLICY,
        "if not self.restart.on_failure:",
        "if False:",
        T_POLICY,
    ),
    m("policy-stall-ignored", POLICY, "        if stalled:\n", "        if False:\n", T_POLICY),
    m(
        "policy-manual-is-a-failure",
        POLICY,
        'if end.action == "stop" or end.waits or _is_manual(end.trigger) or end.complete is not None:',  # noqa: E501 (the code, verbatim)
        'if end.action == "stop" or end.waits or end.complete is not None:',
        T_POLICY,
    ),
    m(
        "policy-exit-codes-not-handoff",
        POLICY,
        "return end.spawn_error is None and end.exit_code in self.restart.exit_codes",
        "return False",
        T_POLICY,
    ),
    m(
        "policy-window-ignored",
        POLICY,
        "if f and now - e.ended_at <= self.restart.window\n",
        "if f\n",
        T_POLICY,
    ),
    m(
        "policy-max-delay-ignored",
        POLICY,
        "min(self.restart.delay * 2 ** (in_a_row - 1), self.restart.max_delay)",
        "self.restart.delay * 2 ** (in_a_row - 1)",
        T_POLICY,
    ),
    # --- sentinel actions ---
    m(
        "sentinel-restart-ignored",
        TRIGGERS,
        'if rule.action in ("restart", "stop"):',
        'if rule.action == "stop":',
        T_RUN,
    ),
    m(
        "sentinel-stop-restarts",
        TRIGGERS,
        "self.fire(Trigger(reason, rule.action))",
        "self.fire(Trigger(reason))",
        T_RUN,
    ),
    m(
        "sentinel-pause-restarts",
        TRIGGERS,
        'self.fire(Trigger(reason, "pause", until, pause_left=until - self._wall()))',
        "self.fire(Trigger(reason))",
        T_SERVICE,
    ),
    m(
        "sentinel-notify-ignored",
        TRIGGERS,
        "            self._notify(str(reason))\n",
        "            pass\n",
        "tests/supervisor",
    ),
    m(
        "sentinel-ignore-restarts",
        TRIGGERS,
        'if rule.action in ("restart", "stop"):',
        'if rule.action in ("restart", "stop", "ignore"):',
        T_RUN,
    ),
    # --- injection modes ---
    m(
        "inject-argv-placeholders-unfilled",
        INJECT,
        "argv = with_hooks(unit.hooks, [fill_placeholders(arg, values) for arg in unit.command])",
        "argv = with_hooks(unit.hooks, list(unit.command))",
        T_RUN,
    ),
    m(
        "inject-stdin-never-typed",
        INJECT,
        "        written = hand_over(session, self.text, self.plan.submit, paste=self.plan.paste)\n",  # noqa: E501
        "        written = 0\n",
        T_RUN,
    ),
    m(
        "inject-file-not-written",
        SUP + "briefing.py",
        '        if unit.inject.mode == "file":\n',
        "        if False:\n",
        T_RUN,
    ),
    m(
        "inject-none-types-the-text",
        INJECT,
        '        if mode != "stdin":\n',
        '        if mode not in ("stdin", "none"):\n',
        T_RUN,
    ),
    # --- bootstrap sections ---
    m(
        "bootstrap-header-no-reason",
        BOOT,
        'why = f"The previous session ended: `{ctx.last_reason}` ({_explain(ctx.last_reason)})."',
        'why = "The previous session ended."',
        T_BOOT,
    ),
    m("bootstrap-files-left-out", BOOT, "        parts += sections\n", "", T_BOOT),
    m(
        "bootstrap-warnings-left-out",
        BOOT,
        '            parts.append((section, _fixed("warnings")))\n',
        "            pass\n",
        T_BOOT,
    ),
    m(
        "bootstrap-changes-left-out",
        BOOT,
        '            parts.append((self.changes, _fixed("changes")))\n',
        "            pass\n",
        T_BOOT,
    ),
    m(
        "bootstrap-rules-left-out",
        BOOT,
        '        return [*parts, (self.rules, _fixed("rules"))]\n',
        "        return parts\n",
        T_BOOT,
    ),
    # --- ending a session's processes ---
    m(
        "sigkill-escalation-removed",
        ENDING,
        "survivors = [] if gone else await ending.kill_all(poll)",
        "survivors = []",
        T_PROC,
    ),
    m(
        "marker-scan-removed",
        TREE,
        "and proctable.has_marker(pid, MARKER_VAR, marker)\n",
        "and False\n",
        T_PROC,
    ),
    # --- the completion gate and worktrees (issue 22) ---
    m(
        "verify-result-ignored",
        SERVICE,
        "if verdict.ok or verdict.aborted:",
        "if True:",
        T_GATE,
    ),
    m(
        "refusals-never-counted",
        SERVICE,
        "        self._refusals += 1\n",
        "        self._refusals = 1\n",
        T_GATE,
    ),
    m(
        "refusal-mark-kept",
        SERVICE,
        "        await self.briefing.clear_completion(unit)\n",
        "",
        T_GATE,
    ),
    m(
        "refusal-left-out-of-the-bootstrap",
        BOOT,
        "        blocks.insert(0, refusal_block(ctx.refusal))\n",
        "        pass\n",
        T_REFUSAL,
    ),
    m(
        "refusal-counted-as-a-crash",
        POLICY,
        "        if end.refusal is not None:  # it claimed completion too early: attempts"
        " bound it\n            return False\n",
        "",
        T_REFUSAL,
    ),
    m(
        "check-tree-left-running",
        "agentd/process/oneshot.py",
        "leader=_unreaped(proc), marker=marker, sid=proc.pid, sig=sig, grace=grace",
        'leader=None, marker="", sid=None, sig=sig, grace=grace',
        T_PROC,
    ),
    m(
        "check-pid-not-owned",
        "agentd/process/oneshot.py",
        "        owned.add(proc.pid)",
        "        pass",
        T_PROC,
    ),
    m(
        "worktree-branch-not-checked",
        "agentd/supervisor/worktree.py",
        "    if elsewhere is not None and os.path.realpath(elsewhere) != os.path.realpath(path):",
        "    if False:",
        T_WORKTREE,
    ),
]
