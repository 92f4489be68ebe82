"""What each session really spent, from the agent CLI's own records.

The CLIs keep exact usage on disk (README: What each session spent): Claude Code its session
transcript, Codex its rollout, Gemini CLI its chat record, aider the analytics
log agentd has it write. Per session agentd finds that file (``sources``),
follows it as the CLI appends to it, bounded and refusing what is no regular
file or leads outside the CLI's own directory (``files``), folds its records
into token counts (``formats``, pure) and keeps the sum (``tally``, pure) in
the session's ``end`` record of the history. It reads off the event loop:
while the session draws output, at most every ``watch.POLL`` seconds, so a
running session's fill of its context and the day's budgets are known during
it (``watch``), and once more after its processes are gone. A unit without a
source keeps the estimate from the screen, marked ``source: estimate``.
"""
