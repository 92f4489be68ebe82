"""A state file swapped for a link between the check and the open (issue 27): the
bootstrap must never show a file from outside the state dir."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path

import pytest

from agentd.memory import statedir
from agentd.memory.bootstrap.render import BootstrapContext, render
from agentd.memory.layout import LayoutFile, resolve

NOW = 1_800_000_000.0
SECRET = "TOPSECRET-outside-the-state-dir"


def ctx(work: Path) -> BootstrapContext:
    return BootstrapContext(
        unit="u",
        session=2,
        last_reason="exit:42",
        state_dir=work / ".agent",
        workdir=work,
        layout=resolve("agentd"),
        budget_tokens=3000,
        now=NOW,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    state = tmp_path / "w" / ".agent"
    state.mkdir(parents=True)
    (state / "state.json").write_text(json.dumps({"mission": "m", "next_action": "n"}))
    (state / "scratch.md").write_text("my own notes\n")
    (tmp_path / "secret.md").write_text(SECRET + "\n")
    return tmp_path / "w"


def swap_for_link(path: Path, target: Path) -> None:
    tmp = path.with_name(path.name + ".swap")
    tmp.symlink_to(target)
    os.replace(tmp, path)


def test_a_file_swapped_for_a_link_after_the_check_is_not_read(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap lands exactly between check_inside and the open: deterministic."""
    scratch = work / ".agent" / "scratch.md"
    real_check = statedir.check_inside

    def check_then_swap(state_dir: Path, path: Path) -> None:
        real_check(state_dir, path)  # passes: a regular file inside
        if path == scratch and not path.is_symlink():
            swap_for_link(path, work.parent / "secret.md")

    monkeypatch.setattr(statedir, "check_inside", check_then_swap)
    boot = render(ctx(work))
    assert scratch.is_symlink()  # the swap happened
    assert SECRET not in boot.text
    assert any("scratch.md" in w for w in boot.warnings), boot.warnings


def test_a_directory_on_the_way_swapped_for_a_link_is_not_followed(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = work.parent / "elsewhere"
    (outside / "snapshots").mkdir(parents=True)
    (outside / "snapshots" / "snapshot-9.json").write_text(json.dumps({"s": SECRET}))
    inside = work / ".agent" / "snapshots"
    inside.mkdir()
    (inside / "snapshot-9.json").write_text(json.dumps({"s": "mine"}))
    real_check = statedir.check_inside

    def check_then_swap(state_dir: Path, path: Path) -> None:
        real_check(state_dir, path)
        if path.parent == inside and not inside.is_symlink():
            os.rename(inside, work / ".agent" / "moved")
            inside.symlink_to(outside / "snapshots")

    monkeypatch.setattr(statedir, "check_inside", check_then_swap)
    layout = [*resolve("agentd")]
    layout.append(LayoutFile(path="snapshots", title="Latest snapshot", kind="latest"))
    c = ctx(work)
    boot = render(dataclasses.replace(c, layout=layout))
    assert inside.is_symlink()
    assert SECRET not in boot.text


def test_links_that_stay_inside_are_followed_beneath_the_state_dir(work: Path) -> None:
    state = work / ".agent"
    (state / "notes").mkdir()
    (state / "notes" / "real.md").write_text("inside notes\n")
    (state / "scratch.md").unlink()
    (state / "scratch.md").symlink_to("notes/../notes/real.md")
    assert "inside notes" in render(ctx(work)).text
    (state / "scratch.md").unlink()
    (state / "scratch.md").symlink_to("../../secret.md")  # up and out: refused
    boot = render(ctx(work))
    assert SECRET not in boot.text and any("outside the state dir" in w for w in boot.warnings)
    (state / "scratch.md").unlink()
    (state / "scratch.md").symlink_to(str(work.parent / "secret.md"))  # absolute: refused
    assert SECRET not in render(ctx(work)).text
    (state / "loop.md").symlink_to("loop.md")
    with statedir.confined(state), pytest.raises(statedir.NotReadable, match="too many"):
        statedir.open_regular(state / "loop.md")


@pytest.mark.slow
def test_a_writer_flipping_a_file_and_a_link_never_leaks_it(work: Path) -> None:
    """The probe's race, kept: a thread flips scratch.md between a file and a link to a
    file outside while bootstraps are rendered (34 of 1,500 leaked it before)."""
    scratch = work / ".agent" / "scratch.md"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            swap_for_link(scratch, work.parent / "secret.md")
            tmp = scratch.with_name("scratch.md.file")
            tmp.write_text("my own notes\n")
            os.replace(tmp, scratch)

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        leaked = sum(SECRET in render(ctx(work)).text for _ in range(1500))
    finally:
        stop.set()
        flipper.join(10)
    assert leaked == 0
