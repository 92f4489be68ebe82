"""Many agents on one repository under the real `agentd serve`: each unit in its own git
worktree (`worktree: {repo, branch}`), made on first use and reused after a daemon
restart; git's refusals as one line and a `failed` unit; `agentctl worktree`; and
`agentd check` naming two units that would share a worktree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import Served, agentd, events, poll_for, write_unit

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

UNITS = ("a", "b", "c")


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(where), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x"}
        | {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"},
    )
    return done.stdout


def make_repo(root: Path) -> Path:
    repo = root / "shop"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("the shop\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "base")
    return repo


def agentctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentd.cli.agentctl", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, AGENTD_HOME=str(home)),
        stdin=subprocess.DEVNULL,
    )


def worker(tmp: Path, meet: Path) -> list[str]:
    """An agent that waits until all three are running, commits its own file on its
    branch, waits until all three have committed, then notes what its checkout holds."""
    script = tmp / "worker.sh"
    script.write_text(
        textwrap.dedent(f"""\
            set -e
            s=$AGENTD_SESSION
            if [ -e "$AGENTD_UNIT.txt" ]; then touch "had-$s"; fi
            meet() {{  # wait until all three reached $1 of this session, at most 60 s
                touch "{meet}/$1.$AGENTD_UNIT.$s"
                n=0
                while [ "$(ls {meet} | grep -c "^$1\\..*\\.$s$")" -lt 3 ]; do
                    n=$((n+1))
                    [ $n -lt 1200 ] || {{ touch "{meet}/timeout.$AGENTD_UNIT"; exit 1; }}
                    sleep 0.05
                done
            }}
            meet started
            if [ "$s" = 1 ]; then
                echo "$AGENTD_UNIT was here" > "$AGENTD_UNIT.txt"
                git add "$AGENTD_UNIT.txt"
                git -c user.name=agent -c user.email=a@x commit -qm "$AGENTD_UNIT session $s"
            fi
            meet committed
            git ls-files > "seen-$s.part" && mv "seen-$s.part" "seen-$s.txt"
            exec sleep 3600
        """)
    )
    return ["sh", str(script)]


def test_three_units_on_one_repo_work_at_once_each_in_its_worktree(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    meet = tmp_path / "meet"
    meet.mkdir()
    for name in UNITS:
        write_unit(
            dhome,
            name,
            {
                "command": worker(tmp_path, meet),
                "worktree": {"repo": str(repo), "branch": f"agent/{name}"},
                "workdir": ".",  # the worktree itself (write_unit gives one otherwise)
                "inject": {"mode": "none"},
                "stop": {"grace": "2s"},
            },
        )
    trees = {name: tmp_path / "shop.worktrees" / "agent" / name for name in UNITS}
    first = Served(dhome)
    serve.append(first.ready())
    poll_for(
        lambda: all((trees[n] / "seen-1.txt").exists() for n in UNITS),
        timeout=90,
        what="all three to commit and look",
    )
    assert [e["to"] for e in events(dhome, "unit.state") if e["to"] == "failed"] == []
    assert not list(meet.glob("timeout.*")), "the three were not running at once"
    for name, tree in trees.items():
        assert (tree / "seen-1.txt").read_text().split() == ["README", f"{name}.txt"]
        log = git(repo, "log", "--format=%s", f"main..agent/{name}").split("\n")[:-1]
        assert log == [f"{name} session 1"]
        assert (tree / ".agent" / "state.json").exists()  # its state dir is in its worktree
        assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"agent/{name}"
    assert not any((repo / f"{n}.txt").exists() for n in UNITS)  # the main checkout: untouched
    made = events(dhome, "unit.worktree")
    assert sorted((e["unit"], e["branch"], e["base"]) for e in made) == [
        (n, f"agent/{n}", "main") for n in UNITS
    ]
    shown = agentctl(dhome, "worktree", "a", "--json")
    assert shown.returncode == 0, shown.stderr
    got = json.loads(shown.stdout)
    assert (got["path"], got["branch"], got["base"], got["ahead"]) == (
        str(trees["a"]),
        "agent/a",
        "main",
        1,
    )
    text = agentctl(dhome, "worktree", "b").stdout
    assert f"path    {trees['b']}\n" in text and "ahead   1\n" in text
    status = first.status("c")
    assert status["worktree"] == {"path": str(trees["c"]), "branch": "agent/c"}

    assert first.stop() == 0  # the daemon stops: the sessions end, the worktrees stay
    assert all((tree / "c.txt").exists() is (name == "c") for name, tree in trees.items())
    second = Served(dhome)
    serve.append(second.ready())
    poll_for(
        lambda: all((trees[n] / "seen-2.txt").exists() for n in UNITS),
        timeout=90,
        what="the three sessions 2",
    )
    for name, tree in trees.items():
        assert (tree / "had-2").exists()  # its own file from session 1 was there
        assert (tree / "seen-2.txt").read_text().split() == ["README", f"{name}.txt"]
    assert len(events(dhome, "unit.worktree")) == 3  # reused, not made again
    listing = git(repo, "worktree", "list", "--porcelain")
    assert listing.count("worktree ") == 4  # the repository and the three


def test_git_refusals_fail_the_unit_with_one_line(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    dirty = make_repo(tmp_path / "d")
    (dirty / "README").write_text("changed, not committed\n")
    cases = {
        "notrepo": ({"repo": str(plain), "branch": "agent/x"}, "is not a git repository"),
        "dirty": ({"repo": str(dirty), "branch": "agent/new"}, "has uncommitted changes"),
        "taken": ({"repo": str(repo), "branch": "main"}, f"branch main is checked out at {repo}"),
    }
    for name, (tree, _) in cases.items():
        write_unit(dhome, name, {"command": ["sleep", "3600"], "worktree": tree, "workdir": "."})
    d = Served(dhome)
    serve.append(d.ready())
    for name, (_, said) in cases.items():
        got = poll_for(
            lambda name=name: (s := d.status(name))["state"] == "failed" and s,  # type: ignore[misc]
            timeout=30,
            what=f"{name} failed",
        )
        assert got["last_reason"] == "worktree-error", got
        assert said in got["detail"] and "\n" not in got["detail"], got
    assert not events(dhome, "session.start")  # nothing ran
    assert [e for e in events(dhome, "unit.state") if e["to"] == "backoff"] == []  # no retry
    assert "Traceback" not in d.stderr
    assert not (tmp_path / "d" / "shop.worktrees").exists()  # the dirty repo: nothing made
    # a branch that exists needs no clean checkout: nothing of the changes is lost
    git(dirty, "branch", "agent/old")
    old = {"repo": str(dirty), "branch": "agent/old"}
    write_unit(dhome, "old", {"command": ["sleep", "3600"], "worktree": old, "workdir": "."})
    poll_for(
        lambda: (
            (r := d.call("status", units=["old"]))["ok"] and r["result"][0]["state"] == "running"
        ),
        timeout=30,
        what="old running (the new unit file picked up)",
    )


def test_two_units_never_share_a_worktree(
    dhome: Path,
    serve: list[Served],
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    tree = {"repo": str(repo), "branch": "agent/one"}
    sleeper = {"command": ["sleep", "3600"], "workdir": "."}
    write_unit(dhome, "one", {**sleeper, "worktree": tree})
    write_unit(dhome, "two", {**sleeper, "worktree": tree, "state": {"dir": ".agent-two"}})
    write_unit(dhome, "other", {**sleeper, "worktree": {**tree, "branch": "agent/other"}})
    checked = agentd(dhome, "check")
    assert checked.returncode == 1, checked.stderr
    assert "two.yaml:" in checked.stderr and "worktree.branch: " in checked.stderr
    assert "is also the worktree of one" in checked.stderr
    assert "other.yaml:" not in checked.stderr  # sharing the repository is fine
    d = Served(dhome)
    serve.append(d.ready())
    poll_for(lambda: d.status("other")["state"] == "running", timeout=30, what="other running")

    def settled() -> dict[str, dict[str, object]]:
        states = {name: d.status(name) for name in ("one", "two")}
        return {} if any(s["state"] == "starting" for s in states.values()) else states

    states = poll_for(settled, timeout=30, what="one and two settled")
    running = [n for n, s in states.items() if s["state"] == "running"]
    assert len(running) == 1, states
    refused = next(s for n, s in states.items() if n not in running)
    assert refused["state"] == "conflict"  # it waits for the worktree, then starts
    assert (
        "is in use by unit" in refused["detail"]
        and "give each its own branch" in (refused["detail"])
    )
