"""A hostile state dir: the probes of issue 11 against the renderer and the readers.

A FIFO, a device, a symbolic link out of the state dir, a huge readonly
file, a layout path that leaves the state dir, control characters and NUL
bytes: every one is a warning in the bootstrap, read (or not) in bounded
amounts (counted in bytes read and files opened, not timed), and nothing of it
can act when the text is typed or passed on.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from agentd.errors import KeyProblem
from agentd.memory import statedir
from agentd.memory.bootstrap.escapes import escape_controls
from agentd.memory.bootstrap.kinds import MAX_SECTION_BYTES
from agentd.memory.bootstrap.render import BootstrapContext, render
from agentd.memory.layout import LayoutFile, parse_files, resolve
from tests.support import bytes_read, needs_read_count

NOW = 1_764_513_120.0


def ctx(work: Path, layout: list[LayoutFile] | None = None) -> BootstrapContext:
    return BootstrapContext(
        unit="u",
        session=2,
        last_reason="exit:42",
        state_dir=work / ".agent",
        workdir=work,
        layout=layout or resolve("agentd"),
        budget_tokens=3000,
        now=NOW,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    state = tmp_path / ".agent"
    state.mkdir()
    (state / "state.json").write_text(json.dumps({"mission": "m", "next_action": "n"}))
    return tmp_path


def rendered(c: BootstrapContext) -> tuple[str, list[str]]:
    boot = render(c)
    return boot.text, boot.warnings


def opened_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path ``os.open`` is asked to open from now on (the state dir's readers
    open with it, ``statedir.open_regular``)."""
    seen: list[str] = []
    real = os.open

    def spy(path: str | os.PathLike[str], *args: object, **kw: object) -> int:
        seen.append(os.fspath(path))
        return real(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    return seen


def test_a_fifo_as_scratch_is_a_warning_not_a_blocked_open(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = work / ".agent" / "scratch.md"
    os.mkfifo(fifo)
    opened = opened_paths(monkeypatch)
    text, warnings = rendered(ctx(work))
    real = os.path.realpath(fifo)
    assert not [p for p in opened if os.path.realpath(p) == real]  # looked at, never opened
    assert any(p.endswith("state.json") for p in opened)  # the spy sees the readers' opens
    assert any("scratch.md" in w and "FIFO" in w for w in warnings), warnings
    assert "_(unreadable: `.agent/scratch.md`)_" in text


@needs_read_count
def test_a_readonly_file_linked_to_dev_zero_is_not_hashed(work: Path) -> None:
    (work / ".agent" / "constraints.md").symlink_to("/dev/zero")
    before = bytes_read()
    _, warnings = rendered(ctx(work))
    read = bytes_read() - before
    assert read < 1 << 20, f"read {read} bytes: /dev/zero was read"  # a hash reads 16 MiB
    assert any("constraints.md" in w and "outside the state dir" in w for w in warnings), warnings


def test_a_device_inside_the_state_dir_is_never_opened(work: Path) -> None:
    with pytest.raises(statedir.NotReadable, match="character device"):
        statedir.open_regular(Path("/dev/zero"))
    os.mkfifo(work / "fifo")
    with pytest.raises(statedir.NotReadable, match="FIFO"):
        statedir.read_head(work / "fifo", 100)


@pytest.mark.slow
@needs_read_count
def test_a_1gb_sparse_readonly_file_is_hashed_bounded_and_once(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = work / ".agent" / "constraints.md"
    with big.open("wb") as f:
        f.truncate(1 << 30)
    hashed: list[Path] = []
    real_hash = statedir.sha256_file

    def counting_hash(path: Path, *args: int) -> str:
        hashed.append(path)
        return real_hash(path, *args)

    monkeypatch.setattr(statedir, "sha256_file", counting_hash)
    reads = []
    for _ in range(2):
        before = bytes_read()
        render(ctx(work))
        reads.append(bytes_read() - before)
    # Each render shows the file's head (at most MAX_SECTION_BYTES); the first also
    # hashes at most HASH_MAX_BYTES of it; the second hashes nothing: the hash is kept.
    slack = 1 << 20  # the other state files
    assert reads[0] <= statedir.HASH_MAX_BYTES + MAX_SECTION_BYTES + slack, reads
    assert reads[1] <= MAX_SECTION_BYTES + slack, reads
    assert hashed == [big], hashed  # hashed once, for two renders
    digest = render(ctx(work)).readonly_hashes["constraints.md"]
    assert digest.startswith(f"sha256:{1 << 30}:")  # a capped hash says so
    small = work / ".agent" / "identity.md"
    small.write_text("me\n")
    assert statedir.sha256_file(small) == hashlib.sha256(b"me\n").hexdigest()  # as recorded


def test_a_symlink_to_a_file_outside_is_not_read(work: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside-secret"
    secret.write_text("TOPSECRET-shadow-line\n")
    (work / ".agent" / "scratch.md").symlink_to(secret)
    text, warnings = rendered(ctx(work))
    assert "TOPSECRET" not in text
    assert any("scratch.md" in w and "outside the state dir" in w for w in warnings), warnings


def test_a_symlink_that_stays_inside_is_followed(work: Path) -> None:
    (work / ".agent" / "notes").mkdir()
    (work / ".agent" / "notes" / "real.md").write_text("inside notes\n")
    (work / ".agent" / "scratch.md").symlink_to("notes/real.md")
    text, warnings = rendered(ctx(work))
    assert "inside notes" in text, warnings


@pytest.mark.parametrize("path", ["/etc/shadow", "../secret.md", "a/../../b.md", "~/x.md"])
def test_a_layout_cannot_name_a_path_outside_the_state_dir(path: str) -> None:
    with pytest.raises(KeyProblem, match="inside the state dir"):
        parse_files([{"path": path}])


def test_nul_and_control_characters_are_shown_escaped_with_a_warning(work: Path) -> None:
    (work / ".agent" / "scratch.md").write_bytes(b"before\x00after \x03 \x1b[31mred\x1b[0m\n")
    state = {"mission": "m\u0003", "next_action": "n\ud800"}
    (work / ".agent" / "state.json").write_text(json.dumps(state))
    boot = render(ctx(work))
    assert not any(c in boot.text for c in "\x00\x03\x1b\ud800")
    assert "before\\x00after \\x03 \\x1b[31mred" in boot.text
    assert "m\\x03" in boot.text and "n\\ud800" in boot.text
    assert any("scratch.md" in w and "NUL" in w and "Ctrl-C" in w for w in boot.warnings)
    boot.text.encode("utf-8")  # no unpaired surrogate is left to break a write


def test_a_reason_or_commit_with_control_characters_is_escaped(work: Path) -> None:
    c = ctx(work)
    boot = render(BootstrapContext(**{**c.__dict__, "last_reason": "manual:\x03\x00"}))
    assert "\x03" not in boot.text and "\\x03" in boot.text


def test_escape_controls_keeps_text_tabs_and_newlines() -> None:
    assert escape_controls("a\tb\nc ü 中") == ("a\tb\nc ü 中", [])
    assert escape_controls("\x7f\x9b") == ("\\x7f\\x9b", ["DEL", "\\x9b"])
