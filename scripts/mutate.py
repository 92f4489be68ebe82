#!/usr/bin/env python3
"""A small mutation check: does the test suite notice each of a list of bugs?

usage: scripts/mutate.py [--list] [--only NAME ...] [--jobs N] [--timeout S] [--logs DIR]

The mutations are in ``scripts/mutations.py``: each names a file, a piece of
its text (which must occur exactly once: checked before anything runs), what
it becomes, and the tests that are about that behaviour. For each mutation
the repository's ``agentd/`` and ``tests/`` (and ``pyproject.toml``, which
holds pytest's configuration) are copied to a temporary directory, the
mutation is applied there (the work tree is never edited) and its tests run
with ``-x`` under a timeout: a failure (or the timeout) *kills* the
mutation, a pass means it *survived*: no test notices that bug. Only the
named tests run, not the whole suite: the output says which.

``PYTHONPATH`` names the copy, so the subprocesses the tests start (``python
-m agentd.cli ...``) import the mutated code too, not the editable install;
the script checks that before it starts, and the ``canary`` mutation, which
only a test of a subprocess can notice, checks it again. Byte code is cached
per run (``PYTHONPYCACHEPREFIX``): no run reads another's stale ``.pyc``.

Equivalent mutations are listed with the reason and not run (unless named
with ``--only``). Exit 1 if any other mutation survived or could not be run.
Minutes to tens of minutes on 2 cores: run it on demand, not in CI.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutations import MUTATIONS, Mutation

REPO = Path(__file__).resolve().parents[1]
COPIED = ("agentd", "tests", "pyproject.toml")


@dataclass
class Outcome:
    mutation: Mutation
    verdict: str  # killed, survived, equivalent, error
    by: str = ""  # the test that failed, the reason, or what went wrong
    seconds: float = 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        default=[],
        help="run only NAME (repeatable; runs an equivalent one too)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutations run at once (default 1)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds a mutation's test run may take; then it counts as killed",
    )
    parser.add_argument(
        "--logs", type=Path, metavar="DIR", help="keep each run's output in DIR/NAME.log"
    )
    args = parser.parse_args(argv)
    names = {mut.name for mut in MUTATIONS}
    if len(names) != len(MUTATIONS):
        print("mutate: two mutations share a name", file=sys.stderr)
        return 2
    if args.list:
        for mut in MUTATIONS:
            note = f"  (equivalent: {mut.equivalent})" if mut.equivalent else ""
            print(f"{mut.name:36} {mut.path:32} {' '.join(mut.tests)}{note}")
        return 0
    unknown = sorted(set(args.only) - names)
    if unknown:
        print(f"mutate: no such mutation: {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    chosen = [mut for mut in MUTATIONS if mut.name in args.only] if args.only else MUTATIONS
    problems = [p for mut in chosen if (p := check(mut))]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mut-") as tmp:
        imported = where_imported(Path(tmp))
        if not imported.startswith(tmp):
            print(
                f"mutate: a subprocess imports agentd from {imported}, not the copy",
                file=sys.stderr,
            )
            return 2
        todo = [mut for mut in chosen if not (mut.equivalent and not args.only)]
        outcomes = {
            mut.name: Outcome(mut, "equivalent", mut.equivalent)
            for mut in chosen
            if mut not in todo
        }
        print(
            f"running {len(todo)} mutation(s), {args.jobs} at a time; each runs only the "
            "tests named for it, with -x",
            flush=True,
        )

        def one(mut: Mutation) -> Outcome:
            outcome = run(Path(tmp) / mut.name, mut, args.timeout, args.logs)
            print(f"{row(outcome)}   [ran {' '.join(mut.tests)}]", flush=True)
            return outcome

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for outcome in pool.map(one, todo):
                outcomes[outcome.mutation.name] = outcome
    ordered = [outcomes[mut.name] for mut in chosen]
    print()
    print(table(ordered))
    return 1 if any(o.verdict in ("survived", "error") for o in ordered) else 0


def check(mut: Mutation) -> str:
    """Why ``mut`` cannot be applied; "" if it can."""
    path = REPO / mut.path
    if not path.is_file():
        return f"mutate: {mut.name}: no file {mut.path}"
    count = path.read_text(encoding="utf-8").count(mut.original)
    if count != 1:
        return f"mutate: {mut.name}: its original text occurs {count} times in {mut.path}, not once"
    missing = [t for t in mut.tests if not (REPO / t.split("::")[0]).exists()]
    if not mut.tests or missing:
        return f"mutate: {mut.name}: no tests to run, or no such tests: {' '.join(missing)}"
    return ""


def copy_repo(dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore)
        else:
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)


def test_env(copy: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTD_", "PYTEST_"))}
    env["PYTHONPATH"] = str(copy)
    env["PYTHONPYCACHEPREFIX"] = str(copy / ".pyc")
    return env


def where_imported(tmp: Path) -> str:
    """Where a subprocess started elsewhere (as the tests start them) finds agentd."""
    copy = tmp / "probe"
    copy_repo(copy)
    probe = subprocess.run(
        [sys.executable, "-c", "import agentd.cli.agentd.main as a; print(a.__file__)"],
        cwd=tmp,
        env=test_env(copy),
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.stdout.strip() or probe.stderr.strip()


FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
STARTED = re.compile(r"^(tests/\S+::\S+)", re.MULTILINE)


def run(copy: Path, mut: Mutation, timeout: float, logs: Path | None) -> Outcome:
    """Copy the repository to ``copy``, apply ``mut`` there, run its tests with -x."""
    copy_repo(copy)
    path = copy / mut.path
    path.write_text(
        path.read_text(encoding="utf-8").replace(mut.original, mut.mutated), encoding="utf-8"
    )
    started = time.monotonic()
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-v",
        "-n",  # in this process (the addopts' -n auto would run xdist's workers):
        "0",  # --jobs says how many mutations run at once
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--basetemp={copy / '.t'}",
        *mut.tests,
    ]
    try:
        proc = subprocess.run(
            argv,
            cwd=copy,
            env=test_env(copy),
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        output, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        output, code = (e.stdout or b"").decode(errors="replace"), None
    seconds = time.monotonic() - started
    shutil.rmtree(copy, ignore_errors=True)
    if logs is not None:
        (logs / f"{mut.name}.log").write_text(output, encoding="utf-8")
    if code == 0:
        return Outcome(mut, "survived", "", seconds)
    if code is None:
        last = STARTED.findall(output)
        return Outcome(mut, "killed", f"{last[-1] if last else 'the run'} (timed out)", seconds)
    if failed := FAILED.search(output):
        return Outcome(mut, "killed", failed.group(1), seconds)
    tail = " | ".join(output.strip().splitlines()[-3:])
    return Outcome(mut, "error", f"pytest exited {code}: {tail}", seconds)


def row(o: Outcome) -> str:
    took = f" ({o.seconds:.0f} s)" if o.seconds else ""
    return f"{o.mutation.name}: {o.verdict}{took} {o.by}".rstrip()


def table(outcomes: list[Outcome]) -> str:
    lines = ["| mutation | result | killed by / why |", "|---|---|---|"]
    lines += [f"| {o.mutation.name} | {o.verdict} | {o.by} |" for o in outcomes]
    counts = {
        v: sum(1 for o in outcomes if o.verdict == v)
        for v in ("killed", "survived", "equivalent", "error")
    }
    return "\n".join([*lines, "", ", ".join(f"{n} {v}" for v, n in counts.items() if n)])


if __name__ == "__main__":
    sys.exit(main())
