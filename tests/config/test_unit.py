"""Unit files: valid ones, defaults, every error kind as ``file:line: key: msg``,
permission refusal (also as root), and the agent-CLI presets."""

from __future__ import annotations

import os
import re
import signal
import textwrap
from pathlib import Path

import pytest

from agentd.config import sections
from agentd.config.lint import state_in_argv
from agentd.config.presets import cli_preset_examples, cli_preset_names, load_cli_preset
from agentd.config.sections import (
    Budget,
    Inject,
    Limits,
    LogSpec,
    NotifySpec,
    PtySpec,
    RestartSpec,
    Sentinel,
    StateSpec,
    StopSpec,
)
from agentd.config.unit import Unit
from agentd.config.unitfile import (
    UnitInvalid,
    check_permissions,
    load_unit,
    parse_unit,
    resolve_unit_arg,
    unit_paths,
)
from agentd.errors import UnitError
from agentd.memory.layout import LayoutFile
from agentd.times import parse_reset_time
from tests.support import FIXTURES

FILE = "units/a.yaml"


def parse(text: str) -> Unit:
    return parse_unit(textwrap.dedent(text), file=FILE, name="a")


def error_of(text: str) -> str:
    with pytest.raises(UnitError) as caught:
        parse(text)
    assert caught.value.file == FILE
    return str(caught.value)


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    path.chmod(mode)
    return path


# --- valid units and defaults ----------------------------------------------------


def test_minimal_unit_gets_every_default() -> None:
    unit = parse("command: [agent, run]\nworkdir: /\n")
    assert unit.name == "a"
    assert unit.source == Path(os.path.abspath(FILE))
    assert unit.command == ["agent", "run"]
    assert unit.workdir == Path("/")
    assert (unit.description, unit.preset, unit.env, unit.autostart) == ("", None, {}, True)
    assert unit.inject == Inject(mode="stdin")
    assert unit.state == StateSpec()
    assert (unit.state.dir, unit.state.layout, unit.state.budget_tokens) == (
        ".agent",
        "agentd",
        3000,
    )
    assert unit.sentinels == []
    assert unit.restart == RestartSpec(
        exit_codes=[42],
        success_codes=[0],
        on_failure=True,
        delay=1,
        max_delay=300,
        min_uptime=10,
        burst=5,
        window=600,
        max_sessions=0,
    )
    assert unit.stop == StopSpec(signal=signal.SIGTERM, grace=10)
    assert unit.limits == Limits(session_timeout=0, idle_timeout=0, context_tokens=0)
    assert unit.budget == Budget(max_sessions_per_day=0, max_runtime_per_day=0)
    assert unit.logs == LogSpec(max_bytes=10_000_000, backups=5)
    assert unit.notify == NotifySpec(command=None, on=["done", "failed", "stalled", "paused"])
    assert unit.pty == PtySpec(cols=120, rows=40)
    assert unit.state_dir == Path("/.agent")
    assert unit.inject_path == Path("/.agent/BOOTSTRAP.md")


def test_the_spec_example_loads(tmp_path: Path) -> None:
    unit = parse(
        f"""\
        description: Cache-layer refactor of the cart module
        command: [claude, --dangerously-skip-permissions, "{{bootstrap}}"]
        workdir: {tmp_path}
        env: {{ANTHROPIC_MODEL: claude-sonnet}}
        autostart: true
        inject:
          mode: argv
          after: null
          submit: "\\r"
          path: .agent/BOOTSTRAP.md
        state:
          dir: .agent
          layout: agentd
          budget_tokens: 3000
        sentinels:
          - {{name: compaction, match: "Compacting conversation", action: restart}}
          - {{name: limit, match: "usage limit reached.*reset at (?P<until>[^.]+)", action: pause}}
        restart:
          exit_codes: [42]
          success_codes: [0]
          on_failure: true
          delay: 1s
          max_delay: 5m
          min_uptime: 10s
          burst: 5
          window: 10m
          max_sessions: 0
        stop: {{signal: TERM, grace: 10s}}
        limits:
          session_timeout: 0
          idle_timeout: 0
          context_tokens: 0
          stall_sessions: 0
        budget: {{max_sessions_per_day: 0, max_runtime_per_day: 0, max_output_tokens_per_day: 0}}
        logs: {{max_bytes: 10MB, backups: 5}}
        notify: {{command: [notify-send, agentd, "{{unit}}: {{event}}"], on: [done, failed]}}
        """
    )
    assert unit.inject.mode == "argv"
    assert unit.sentinels[1].pattern.search("usage limit reached, reset at 3pm.")
    assert unit.restart.max_delay == 300
    assert unit.restart.window == 600
    assert unit.notify.command == ["notify-send", "agentd", "{unit}: {event}"]
    assert unit.notify.on == ["done", "failed"]  # `on:` is a key, not YAML 1.1's True


@pytest.mark.parametrize(
    ("command", "argv", "mode"),
    [
        ("claude '{bootstrap}'", ["claude", "{bootstrap}"], "argv"),
        ('[aider, -f, "{bootstrap_file}"]', ["aider", "-f", "{bootstrap_file}"], "argv"),
        ("[sleep, 10, 1.5, true]", ["sleep", "10", "1.5", "true"], "stdin"),
        ("'bash -c \"f() { echo; }; f\"'", ["bash", "-c", "f() { echo; }; f"], "stdin"),
        ("'echo {{bootstrap}}'", ["echo", "{{bootstrap}}"], "stdin"),
    ],
)
def test_command_forms_and_inject_default(command: str, argv: list[str], mode: str) -> None:
    unit = parse(f"command: {command}\nworkdir: /\n")
    assert (unit.command, unit.inject.mode) == (argv, mode)


def test_expansion_of_home_and_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PROJ", "shop")
    monkeypatch.delenv("NOPE", raising=False)
    (tmp_path / "src" / "shop").mkdir(parents=True)
    unit = parse(
        """\
        command: [~/bin/agent, $PROJ, "${PROJ}-x", $NOPE]
        workdir: ~/src/$PROJ
        env: {A: ~/x, B: "${PROJ}", C: $NOPE, D: 1, E: true, F: 1.5}
        state: {dir: ~/state/$PROJ}
        inject: {mode: file, path: $PROJ/BOOT.md}
        """
    )
    assert unit.command == [f"{tmp_path}/bin/agent", "shop", "shop-x", "$NOPE"]
    assert unit.workdir == tmp_path / "src" / "shop"
    assert unit.env == dict(A=f"{tmp_path}/x", B="shop", C="$NOPE", D="1", E="true", F="1.5")
    assert unit.state_dir == tmp_path / "state" / "shop"
    assert unit.inject_path == tmp_path / "src" / "shop" / "shop" / "BOOT.md"


def test_relative_workdir_is_relative_to_the_unit_file(tmp_path: Path) -> None:
    (tmp_path / "units" / "proj").mkdir(parents=True)
    path = write(tmp_path / "units" / "a.yaml", "command: x\nworkdir: proj\n")
    assert load_unit(path).workdir == tmp_path / "units" / "proj"


def test_durations_sizes_signals_and_inline_layout() -> None:
    unit = parse(
        """\
        command: x
        workdir: /
        restart: {delay: 500ms, max_delay: 1.5h, window: 1d}
        stop: {signal: SIGINT, grace: 2}
        logs: {max_bytes: 1GiB}
        limits: {idle_timeout: 5m}
        budget: {max_runtime_per_day: 8h}
        sentinels: [{name: lim, match: "x", action: pause, pause_for: 30m}]
        state: {layout: [{path: notes.md, title: Notes}]}
        """
    )
    assert (unit.restart.delay, unit.restart.max_delay, unit.restart.window) == (0.5, 5400, 86400)
    assert unit.stop.signal is signal.SIGINT
    assert unit.logs.max_bytes == 1024**3
    assert (unit.limits.idle_timeout, unit.budget.max_runtime_per_day) == (300, 28800)
    assert unit.sentinels[0].pause_for == 1800
    assert unit.state.layout == [LayoutFile(path="notes.md", title="Notes")]
    assert Unit.model_validate(unit.model_dump()).state == unit.state  # dumps and loads back


def test_sentinel_pattern_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    unit = parse("command: x\nworkdir: /\nsentinels: [{name: c, match: 'Compact\\w+'}]\n")
    sentinel = unit.sentinels[0]
    # Compiled at validation: using it compiles nothing (re's own cache would
    # hand back the same object, so ``is`` alone cannot tell).
    compiled: list[str] = []
    real = sections.compile_regex
    monkeypatch.setattr(sections, "compile_regex", lambda p: compiled.append(p) or real(p))
    assert sentinel.pattern.search("Compacting") and sentinel.pattern.search("Compacted")
    assert compiled == []
    # model_construct() skips validation: the first use compiles, once.
    bare = Sentinel.model_construct(name="c", match="Compact\\w+")
    assert bare.pattern is bare.pattern and compiled == ["Compact\\w+"]


def test_yaml_merge_keys_and_aliases() -> None:
    unit = parse(
        """\
        command: &cmd [agent]
        workdir: /
        restart: &r {delay: 2s, burst: 3}
        limits:
          <<: {idle_timeout: 1m, session_timeout: 1h}
          idle_timeout: 2m
        """
    )
    assert unit.command == ["agent"]
    assert (unit.limits.idle_timeout, unit.limits.session_timeout) == (120, 3600)


# --- errors: file:line: key.path: message ---------------------------------------

ERRORS = [
    (  # unknown key (a typo)
        "command: x\nworkdir: /\nrestart:\n  delay: 1s\n  dealy: 2s\n",
        "units/a.yaml:5: restart.dealy: unknown key",
    ),
    (  # a missing required key points at the document's first line
        "# a comment\n\ndescription: d\nworkdir: /\n",
        "units/a.yaml:3: command: required key missing",
    ),
    (
        "command: x\nworkdir: /\nsentinels:\n  - {name: a, match: x}\n  - {name: b}\n",
        "units/a.yaml:5: sentinels[1].match: required key missing",
    ),
    (  # a bad regex names the regex problem
        "command: x\nworkdir: /\nsentinels:\n  - name: a\n    match: 'x'\n  - name: b\n"
        "    match: '(unclosed'\n",
        "units/a.yaml:7: sentinels[1].match: invalid regex: missing ), unterminated subpattern"
        " at position 0",
    ),
    (
        "command: x\nworkdir: /\ninject: {after: '[a-'}\n",
        "units/a.yaml:3: inject.after: invalid regex: unterminated character set at position 0",
    ),
    (
        "command: x\nworkdir: /\nsentinels: [{name: 'a b', match: x}]\n",
        "units/a.yaml:3: sentinels[0].name: string should match pattern"
        " '^[A-Za-z0-9_.:-]{1,64}$' (got 'a b')",
    ),
    (
        "command: x\nworkdir: /\nsentinels:\n- {name: a, match: x}\n- {name: a, match: y}\n",
        "units/a.yaml:5: sentinels[1].name: duplicate sentinel name 'a'",
    ),
    (
        "command: x\nworkdir: /\nsentinels: [{name: a, match: x, action: explode}]\n",
        "units/a.yaml:3: sentinels[0].action: should be 'restart', 'stop', 'pause', 'notify' or"
        " 'ignore' (got 'explode')",
    ),
    (
        "command: x\nworkdir: /nonexistent/dir\n",
        "units/a.yaml:2: workdir: directory '/nonexistent/dir' does not exist",
    ),
    (
        "command: x\nworkdir: /etc/hostname\n",
        "units/a.yaml:2: workdir: '/etc/hostname' is not a directory",
    ),
    ("command: []\nworkdir: /\n", "units/a.yaml:1: command: must not be empty"),
    ("command: ''\nworkdir: /\n", "units/a.yaml:1: command: must not be empty"),
    ("command: ['', x]\nworkdir: /\n", "units/a.yaml:1: command[0]: the program name is empty"),
    (
        'command: "a \'b"\nworkdir: /\n',
        "units/a.yaml:1: command: cannot split command: No closing quotation",
    ),
    (
        "workdir: /\ncommand:\n  - agent\n  - '{bootstrapp}'\n",
        "units/a.yaml:4: command[1]: unknown placeholder {bootstrapp}; known: {bootstrap},"
        " {bootstrap_file}, {unit}, {session}, {workdir}, {event} (write {{ and }} for braces)",
    ),
    (
        "command: x\nworkdir: /\ninject:\n  mode: argv\n",
        "units/a.yaml:4: inject.mode: argv needs {bootstrap} or {bootstrap_file} in command",
    ),
    (
        "command: x\nworkdir: /\ninject: {mode: paste}\n",
        "units/a.yaml:3: inject.mode: should be 'argv', 'stdin', 'file' or 'none' (got 'paste')",
    ),
    (
        "command: x\nworkdir: /\nenv:\n  GOOD: 1\n  1BAD: x\n",
        "units/a.yaml:5: env.1BAD: not a valid environment variable name",
    ),
    (
        "command: x\nworkdir: /\nenv: {A: '{nope}'}\n",
        "units/a.yaml:3: env.A: unknown placeholder {nope}; known: {bootstrap}, {bootstrap_file},"
        " {unit}, {session}, {workdir}, {event} (write {{ and }} for braces)",
    ),
    ("command: x\nworkdir: /\nenv: [A]\n", "units/a.yaml:3: env: should be a valid dictionary"),
    (
        "command: x\nworkdir: /\nrestart:\n  exit_codes: [0, 42]\n",
        "units/a.yaml:4: restart.exit_codes: exit code 0 is also in success_codes;"
        " a code means one thing",
    ),
    (  # a threshold needs to know where the percentage is
        "command: x\nworkdir: /\nhandoff: {when: low, below: 10}\n",
        "units/a.yaml:3: handoff.below: needs a group named left (or left_...) in `when` holding"
        " the percent left, or used (or used_...) holding the percent used",
    ),
    (
        "command: x\nworkdir: /\nrestart: {exit_codes: [300]}\n",
        "units/a.yaml:3: restart.exit_codes[0]: should be less than or equal to 255 (got 300)",
    ),
    (
        "command: x\nworkdir: /\nrestart: {delay: -1s}\n",
        "units/a.yaml:3: restart.delay: duration must not be negative, got '-1s'",
    ),
    (
        "command: x\nworkdir: /\nrestart: {burst: many}\n",
        "units/a.yaml:3: restart.burst: should be a valid integer (got 'many')",
    ),
    (
        "command: x\nworkdir: /\nrestart: 5\n",
        "units/a.yaml:3: restart: should be a valid dictionary or instance of RestartSpec (got 5)",
    ),
    (
        "command: x\nworkdir: /\nstop: {signal: TREM}\n",
        "units/a.yaml:3: stop.signal: unknown signal 'TREM'; known: ABRT,",
    ),
    (
        "command: x\nworkdir: /\nlogs: {max_bytes: 10XB}\n",
        "units/a.yaml:3: logs.max_bytes: expected a number of bytes or a size like 512KB, 10MB,"
        " 1GB (x1000) or 512KiB, 1GiB (x1024), got '10XB'",
    ),
    (
        "command: x\nworkdir: /\npty: {cols: 5}\n",
        "units/a.yaml:3: pty.cols: should be greater than or equal to 10 (got 5)",
    ),
    (
        "command: x\nworkdir: /\nstate: {budget_tokens: 0}\n",
        "units/a.yaml:3: state.budget_tokens: should be greater than 0 (got 0)",
    ),
    (
        "command: x\nworkdir: /\nstate: {layout: nope}\n",
        "units/a.yaml:3: state.layout: unknown layout 'nope'; choose one of: agentd, "
        "checkpoint, contract, decision-log, four-file, memento, or list files",
    ),
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n"
        "    - {path: a.md}\n    - {path: b.md, tail: 0}\n",
        "units/a.yaml:6: state.layout[1].tail: should be greater than or equal to 1 (got 0)",
    ),
    (
        "command: x\nworkdir: /\nstate: {layout: 5}\n",
        "units/a.yaml:3: state.layout: expected a layout name or a list of files, got 5",
    ),
    # an inline layout is checked by the layout's own schema (no pydantic), same reports
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n    - path: a.md\n"
        "    - path: b.md\n      tial: 3\n",
        "units/a.yaml:7: state.layout[1].tial: unknown key",
    ),
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n    - path: a.md\n      kind: txt\n",
        "units/a.yaml:6: state.layout[0].kind: should be 'text', 'task-state', 'decision-log',"
        " 'handoff', 'entries' or 'latest' (got 'txt')",
    ),
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n    - path: a.md\n      section: [A, 5]\n",
        "units/a.yaml:6: state.layout[0].section[1]: should be a valid string (got 5)",
    ),
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n    - title: A\n",
        "units/a.yaml:5: state.layout[0].path: required key missing",
    ),
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n    - path: ''\n",
        "units/a.yaml:5: state.layout[0].path: should have at least 1 character",
    ),
    (
        "command: x\nworkdir: /\nstate:\n  layout:\n    - a.md\n",
        "units/a.yaml:5: state.layout[0]: should be a mapping of keys (got 'a.md')",
    ),
    (
        "command: x\nworkdir: /\nnotify: {on: [done, bogus]}\n",
        "units/a.yaml:3: notify.on[1]: should be 'done', 'failed', 'stalled', 'paused',"
        " 'stopped' or 'restart' (got 'bogus')",
    ),
    (
        "command: x\nworkdir: /\nautostart: maybe\n",
        "units/a.yaml:3: autostart: should be a valid boolean (got 'maybe')",
    ),
    (
        "preset: claude\nworkdir: /\n",
        "units/a.yaml:1: preset: unknown preset 'claude'; choose one of: aider, claude-code,"
        " codex, gemini",
    ),
    (
        "name: b\ncommand: x\nworkdir: /\n",
        "units/a.yaml:1: name: 'b' differs from the file"
        " name; a unit is named after its file (remove this key)",
    ),
    ("source: /x\ncommand: x\nworkdir: /\n", "units/a.yaml:1: source: unknown key"),
    # YAML-level problems
    (
        "command: x\nworkdir: /\ncommand: y\n",
        "units/a.yaml:3: command: duplicate key 'command' (first on line 1)",
    ),
    (
        "command: x\nworkdir: /\nrestart:\n  delay: 1\n  delay: 2\n",
        "units/a.yaml:5: restart.delay: duplicate key 'delay' (first on line 4)",
    ),
    (
        "command: [x\nworkdir: /\n",
        "units/a.yaml:2: invalid YAML: expected ',' or ']', but got ':'"
        " (while parsing a flow sequence at line 1)",
    ),
    (
        "command: x\n\tworkdir: /\n",
        "units/a.yaml:2: invalid YAML: found character '\\t' that cannot start any token",
    ),
    (
        "a: 1\n---\nb: 2\n",
        "units/a.yaml:2: invalid YAML: expected a single document in the"
        " stream, but found another document",
    ),
    (
        "- command\n- workdir\n",
        "units/a.yaml:1: a unit file must be a mapping of keys (key: value)",
    ),
    ("\n\njust text\n", "units/a.yaml:3: a unit file must be a mapping of keys (key: value)"),
    ("", "units/a.yaml:1: empty file: a unit needs at least command and workdir"),
    ("# only a comment\n", "units/a.yaml:1: empty file: a unit needs at least command and workdir"),
    ("command: &a [*a]\n", "units/a.yaml:1: recursive alias"),
    (
        "command: !shell x\n",
        "units/a.yaml:1: invalid YAML: could not determine a constructor for the tag '!shell'",
    ),
    ("command: x\nworkdir: 2020-13-45\n", "units/a.yaml:2: invalid value: month must be in 1..12"),
    ("? [a, b]\n: 1\n", "units/a.yaml:1: a key must be a plain value"),
    (
        "command: x\x00\n",
        "units/a.yaml:1: invalid YAML: unacceptable character #x0000: special"
        " characters are not allowed",
    ),
    ("limits:\n  <<: 5\n", "units/a.yaml:2: << must merge a mapping or a list of mappings"),
]


@pytest.mark.parametrize(("text", "expected"), ERRORS)
def test_errors_name_file_line_and_key(text: str, expected: str) -> None:
    message = error_of(text)
    assert message.startswith(expected), f"\n{message}\n!=\n{expected}"
    assert "pydantic" not in message and "https://" not in message


def test_several_problems_are_all_reported_in_line_order() -> None:
    with pytest.raises(UnitInvalid) as caught:
        parse(
            """\
            workdir: /
            restart:
              burst: -1
              dealy: 5s
            stop: {grace: soon}
            """
        )
    error = caught.value
    assert str(error) == "\n".join(
        [
            "units/a.yaml:1: command: required key missing",
            "units/a.yaml:3: restart.burst: should be greater than or equal to 0 (got -1)",
            "units/a.yaml:4: restart.dealy: unknown key (did you mean delay?)",
            "units/a.yaml:5: stop.grace: expected a number of seconds or a duration like 500ms,"
            " 10s, 5m, 1.5h, 1d, 1h30m, got 'soon'",
        ]
    )
    assert [p.line for p in error.problems] == [1, 3, 4, 5]
    assert (error.file, error.line, error.key, error.message) == (
        FILE,
        1,
        "command",
        "required key missing",
    )
    assert isinstance(error, UnitError)


# --- loading files -------------------------------------------------------------


def test_load_unit_names_the_unit_after_its_file(tmp_path: Path) -> None:
    path = write(tmp_path / "units" / "shop-cart.v2.yaml", "command: x\nworkdir: /\n")
    unit = load_unit(path)
    assert (unit.name, unit.source) == ("shop-cart.v2", path)


@pytest.mark.parametrize("stem", ["-x", "a b", ".hidden", "x" * 65])
def test_load_unit_refuses_invalid_names(tmp_path: Path, stem: str) -> None:
    path = write(tmp_path / f"{stem}.yaml", "command: x\nworkdir: /\n")
    with pytest.raises(UnitError, match="is not a valid unit name") as caught:
        load_unit(path)
    assert caught.value.file == str(path)


def test_load_unit_reports_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(UnitError, match="cannot read"):
        load_unit(tmp_path / "missing.yaml")
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"command: x\nworkdir: /\ndescription: \xff\n")
    path.chmod(0o600)
    with pytest.raises(UnitError) as caught:
        load_unit(path)
    assert str(caught.value) == f"{path}:3: not UTF-8 text"


def test_load_unit_reports_the_path_it_was_given(tmp_path: Path) -> None:
    path = write(tmp_path / "a.yaml", "command: x\nworkdir: /\nbogus: 1\n")
    with pytest.raises(UnitError) as caught:
        load_unit(path)
    assert str(caught.value) == f"{path}:3: bogus: unknown key"


# --- permissions ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        (0o664, "mode 0664 is group-writable"),
        (0o646, "mode 0646 is world-writable"),
        (0o666, "mode 0666 is group- and world-writable"),
        (0o777, "mode 0777 is group- and world-writable"),
    ],
)
def test_writable_by_others_is_refused_even_as_root(
    tmp_path: Path, mode: int, problem: str
) -> None:
    path = write(tmp_path / "a.yaml", "command: x\nworkdir: /\n", mode)
    with pytest.raises(UnitError) as caught:
        load_unit(path)
    assert str(caught.value) == f"{path}: {problem}; run: chmod go-w {path}"
    assert load_unit(path, check_permissions=False).name == "a"


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_units_dir_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    units = tmp_path / "units"
    units.mkdir()
    path = write(units / "a.yaml", "command: x\nworkdir: /\n")
    units.chmod(mode)
    with pytest.raises(UnitError) as caught:
        load_unit(path)
    assert str(caught.value) == (
        f"{path}: its directory {units} is mode {mode:04o}, writable "
        f"by others, who could replace it; run: chmod go-w {units}"
    )
    units.chmod(0o1777)  # sticky, like /tmp: nobody replaces another's file
    assert load_unit(path).name == "a"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory away")
def test_a_units_dir_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    units = tmp_path / "units"
    units.mkdir()
    path = write(units / "a.yaml", "command: x\nworkdir: /\n")
    os.chown(units, 65534, 65534)
    with pytest.raises(UnitError, match="is owned by uid 65534"):
        load_unit(path)


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o400, 0o755])
def test_private_files_are_accepted(tmp_path: Path, mode: int) -> None:
    check_permissions(write(tmp_path / "a.yaml", "command: x\n", mode))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file away")
def test_a_file_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "a.yaml", "command: x\nworkdir: /\n")
    os.chown(path, 65534, 65534)
    with pytest.raises(UnitError) as caught:
        load_unit(path)
    assert str(caught.value) == (
        f"{path}: owned by uid 65534, not by this user (uid 0) or root; run: chown 0 {path}"
    )


# --- finding unit files ----------------------------------------------------------


def test_unit_paths(tmp_path: Path) -> None:
    assert unit_paths(tmp_path / "missing") == []
    for name in ["b.yaml", "a.yml", "c.yaml", ".#c.yaml", "notes.txt", "d.yaml.bak"]:
        (tmp_path / name).write_text("")
    (tmp_path / "dir.yaml").mkdir()
    assert unit_paths(tmp_path) == [tmp_path / n for n in ["a.yml", "b.yaml", "c.yaml"]]


def test_resolve_unit_arg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    units = tmp_path / "units"
    write(units / "shop.yaml", "")
    write(units / "old.yml", "")
    write(tmp_path / "here.yaml", "")
    monkeypatch.chdir(tmp_path)
    assert resolve_unit_arg("shop", units) == units / "shop.yaml"
    assert resolve_unit_arg("old", units) == units / "old.yml"
    assert resolve_unit_arg("here.yaml", units) == Path("here.yaml")
    assert resolve_unit_arg(str(units / "shop.yaml"), units) == units / "shop.yaml"
    with pytest.raises(UnitError) as caught:
        resolve_unit_arg("nope", units)
    assert str(caught.value) == f"no unit named nope in {units} (looked for nope.yaml)"
    with pytest.raises(UnitError, match="no such unit file"):
        resolve_unit_arg("./nope.yaml", units)
    with pytest.raises(UnitError, match="not a regular file"):
        resolve_unit_arg("units/", units)


# --- agent-CLI presets -----------------------------------------------------------


def test_the_four_presets_exist() -> None:
    assert cli_preset_names() == ["aider", "claude-code", "codex", "gemini"]


@pytest.mark.parametrize("name", cli_preset_names())
def test_each_preset_alone_makes_a_valid_unit(name: str) -> None:
    unit = parse(f"preset: {name}\nworkdir: /\n")
    assert unit.preset == name
    assert unit.command and unit.sentinels
    assert unit.inject.mode == "argv"


@pytest.mark.parametrize("name", cli_preset_names())
def test_each_sentinel_matches_its_real_examples(name: str) -> None:
    unit = parse(f"preset: {name}\nworkdir: /\n")
    examples = cli_preset_examples(name)
    rules = [s.name for s in unit.sentinels] + (["handoff"] if unit.handoff.when else [])
    assert sorted(examples) == sorted(rules), "a sentinel (or the handoff rule) lacks examples"
    if unit.handoff.pattern is not None:
        for line in examples["handoff"]:
            match = unit.handoff.pattern.search(line)
            assert match, f"{name}: handoff does not match {line!r}"
            groups = {k: v for k, v in match.groupdict().items() if v is not None}
            assert unit.handoff.percent_left(groups) is not None, line
    for sentinel in unit.sentinels:
        for line in examples[sentinel.name]:
            match = sentinel.pattern.search(line)
            assert match, f"{name}: {sentinel.name} does not match {line!r}"
            if "until" in sentinel.pattern.groupindex:
                parse_reset_time(match["until"], 1_764_500_000)  # readable, never raises


def test_handoff_reads_the_percent_left_or_100_minus_the_percent_used() -> None:
    spec = parse(
        r"""
        command: x
        workdir: /
        handoff: {when: '(?P<left>\d+)% left|(?P<used_now>\d+)% used', below: 40}
        """
    ).handoff
    assert spec.percent_left({"left": "30"}) == 30
    assert spec.percent_left({"used_now": "70"}) == 30
    assert spec.wanted({"used_now": "65"}) and not spec.wanted({"used_now": "55"})


def test_gemini_does_not_restart_on_42() -> None:
    """Gemini CLI exits 42 on an input error: restarting would loop on it."""
    assert 42 not in parse("preset: gemini\nworkdir: /\n").restart.exit_codes


# Exit codes as the CLIs' sources define them: gemini packages/core/src/utils/errors.ts
# and exitCodes.ts; aider exits 0 after a --message-file turn and 1 on a setup error.
@pytest.mark.parametrize(
    ("name", "code", "meaning", "kind"),
    [
        ("gemini", 0, "done", "success"),
        ("gemini", 53, "session turn limit (headless)", "restart"),
        ("gemini", 41, "authentication error", "other"),
        ("gemini", 42, "input error", "other"),
        ("gemini", 44, "sandbox error", "other"),
        ("gemini", 52, "config error", "other"),
        ("gemini", 54, "tool execution error", "other"),
        ("gemini", 55, "untrusted workspace", "other"),
        ("gemini", 130, "cancelled", "other"),
        ("aider", 0, "one --message-file turn done", "restart"),
        ("aider", 1, "setup error (message file not found...)", "other"),
    ],
)
def test_preset_exit_codes_follow_the_cli_sources(
    name: str, code: int, meaning: str, kind: str
) -> None:
    restart = parse(f"preset: {name}\nworkdir: /\n").restart
    got = (
        "restart"
        if code in restart.exit_codes
        else "success"
        if code in restart.success_codes
        else "other"
    )
    assert got == kind, f"{name} exit {code} ({meaning})"


def test_gemini_handoff_reads_the_context_column_not_the_quota() -> None:
    handoff = parse("preset: gemini\nworkdir: /\n").handoff
    assert handoff.pattern is not None
    # The default footer (context column hidden) with Google-login quota: no handoff.
    assert not handoff.pattern.search("~/work/shop   main   no sandbox   gemini-2.5-pro   80% used")
    both = handoff.pattern.search("~/w   main   gemini-2.5-pro   45% used   12% used")
    assert both is not None
    groups = {k: v for k, v in both.groupdict().items() if v is not None}
    assert handoff.percent_left(groups) == 55 and handoff.wanted(groups)


def test_gemini_reset_time_keeps_the_zone_offset() -> None:
    sentinels = {s.name: s for s in parse("preset: gemini\nworkdir: /\n").sentinels}
    hit = sentinels["usage-limit"].pattern.search("Access resets at 5:15 AM GMT+5:30.")
    assert hit is not None and hit["until"] == "5:15 AM GMT+5:30"


def test_claude_code_sentinels_match_the_captured_tui() -> None:
    captures = sorted(FIXTURES.glob("claude-code-*.raw")) if FIXTURES.is_dir() else []
    if not captures:
        pytest.skip(f"no captures in {FIXTURES}")
    unit = parse("preset: claude-code\nworkdir: /\n")
    fired = set()
    for capture in captures:
        for line in _screen_lines(capture.read_bytes()):
            fired |= {s.name for s in unit.sentinels if s.pattern.search(line)}
    assert {"compacting", "compacted", "context-limit"} <= fired


def _screen_lines(raw: bytes) -> list[str]:
    """A rough screen reading (the real one is agentd.terminal.matcher's): enough for a test."""
    text = raw.decode("utf-8", "replace")
    text = re.sub(r"\x1b\[\d*[CG]", " ", text)  # horizontal moves stand for spaces
    text = re.sub(r"\x1b\][^\x07]*\x07", "", text)  # window titles
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", text)
    return re.split(r"[\r\n]+", re.sub(r"\x1b.", "", text))


def test_preset_lies_under_the_unit() -> None:
    unit = parse(
        """\
        preset: claude-code
        workdir: /
        command: [claude, --dangerously-skip-permissions, "{bootstrap}"]
        restart: {delay: 5s}
        stop: {grace: 30s}
        """
    )
    preset = load_cli_preset("claude-code")
    assert unit.command == ["claude", "--dangerously-skip-permissions", "{bootstrap}"]
    assert unit.restart.delay == 5  # the unit's own value
    assert unit.restart.exit_codes == preset["restart"]["exit_codes"]  # merged from the preset
    assert unit.stop.grace == 30 and unit.stop.signal is signal.SIGTERM
    assert [s.name for s in unit.sentinels] == [s["name"] for s in preset["sentinels"]]


def test_preset_lists_are_replaced_not_appended() -> None:
    unit = parse(
        """\
        preset: codex
        workdir: /
        sentinels: [{name: mine, match: DONE, action: stop}]
        restart: {exit_codes: [3]}
        """
    )
    assert [s.name for s in unit.sentinels] == ["mine"]
    assert unit.restart.exit_codes == [3]


@pytest.mark.parametrize(
    ("preset", "in_ps"),
    [("claude-code", False), ("codex", False), ("gemini", True), ("aider", False)],
)
def test_presets_pass_the_bootstrap_by_its_file_where_the_cli_can_read_it(
    preset: str, in_ps: bool
) -> None:
    unit = parse(f"preset: {preset}\nworkdir: /\n")
    assert unit.inject.mode == "argv"
    assert bool(state_in_argv(unit)) is in_ps
    assert any("{bootstrap_file}" in arg for arg in unit.command) is not in_ps


def test_a_unit_command_without_bootstrap_turns_the_preset_to_stdin() -> None:
    unit = parse("preset: claude-code\nworkdir: /\ncommand: claude\n")
    assert unit.inject.mode == "stdin"


def test_load_cli_preset_returns_a_fresh_copy() -> None:
    load_cli_preset("aider")["sentinels"].clear()
    assert load_cli_preset("aider")["sentinels"]
    assert "examples" not in load_cli_preset("aider")
