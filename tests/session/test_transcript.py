"""Transcript: redaction across chunk boundaries, rotation, file modes."""

from __future__ import annotations

import itertools
import re
import stat
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.session.redact import Redactor, secrets_from_env
from agentd.session.transcript import Transcript

KEY = "sk-ant-api03-Zm9vYmFyYmF6"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_secrets_come_from_marked_names_longest_first() -> None:
    env = {
        "ANTHROPIC_API_KEY": KEY,
        "github_token": "ghp_abcdef",
        "DB_PASSWORD": "hunter22",
        "MY_SECRET_2": "hunter22",  # the same value once
        "SHORT_TOKEN": "1",  # too short to redact: it would garble the output
        "HOME": "/home/dev",
        "KEYBOARD": "qwerty-layout",  # marker anywhere in the name counts
    }
    assert secrets_from_env(env) == [KEY, "qwerty-layout", "ghp_abcdef", "hunter22"]


def redact_in_chunks(secrets: list[str], chunks: list[bytes]) -> bytes:
    r = Redactor(secrets)
    return b"".join(r.redact(c) for c in chunks) + r.flush()


def test_a_secret_split_across_chunks_is_redacted() -> None:
    data = f"export KEY={KEY}; echo done\n".encode()
    for cut in range(len(data) + 1):
        assert redact_in_chunks([KEY], [data[:cut], data[cut:]]) == b"export KEY=***; echo done\n"
    singles = [data[i : i + 1] for i in range(len(data))]
    assert redact_in_chunks([KEY], singles) == b"export KEY=***; echo done\n"


def test_redactor_holds_back_only_a_possible_secret_start() -> None:
    r = Redactor([KEY])
    assert r.redact(b"plain text, sk-ant") == b"plain text, "
    assert r.redact(b"-nope") == b"sk-ant-nope"
    assert r.redact(b"tail sk") == b"tail "
    assert r.flush() == b"sk"
    assert r.flush() == b""


def test_without_secrets_nothing_is_held_back() -> None:
    r = Redactor([])
    assert r.redact(b"sk-ant") == b"sk-ant"
    assert r.flush() == b""
    assert r.redact_text("x") == "x"


def test_a_multi_line_secret_is_caught_as_the_terminal_shows_it() -> None:
    pem = "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----"
    shown = pem.replace("\n", "\r\n").encode()
    assert redact_in_chunks([pem], [b"cat key: " + shown[:20], shown[20:] + b"\r\n"]) == (
        b"cat key: ***\r\n"
    )


def test_redact_text_for_event_fields() -> None:
    r = Redactor(["hunter22", KEY])
    assert r.redact_text(f"argv: claude --key {KEY} --pw hunter22") == (
        "argv: claude --key *** --pw ***"
    )


SECRETS = ["abcd", "bcdzz", "abcdef", "cdxy", "中文密码"]


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from([*"abcdefxyz ", "中", "文", "密", "码"]), max_size=80),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_redaction_does_not_depend_on_chunking(text: str, cuts: list[int]) -> None:
    data = text.encode()
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points)]
    ordered = sorted(SECRETS, key=lambda s: (-len(s), s))
    whole = re.compile("|".join(map(re.escape, ordered)).encode()).sub(b"***", data)
    assert redact_in_chunks(SECRETS, chunks) == whole


def test_transcript_writes_redacted_notes_and_output(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "unit" / "transcript.log"
    t = Transcript(path, max_bytes=1 << 20, backups=2, redactor=Redactor([KEY]))
    t.note("2026-11-30T14:32:00Z session 3 started")
    t.write(b"key is sk-ant-api0")
    t.write(b"3-Zm9vYmFyYmF6\n")
    t.note(f"2026-11-30T14:40:00Z session 3 ended with {KEY}")
    t.close()
    t.close()  # idempotent
    assert path.read_bytes() == (
        b"\n--- agentd 2026-11-30T14:32:00Z session 3 started ---\n"
        b"key is ***\n"
        b"\n--- agentd 2026-11-30T14:40:00Z session 3 ended with *** ---\n"
    )
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(path.parent.parent) == 0o700


def test_close_emits_what_the_redactor_held(tmp_path: Path) -> None:
    path = tmp_path / "transcript.log"
    t = Transcript(path, max_bytes=0, backups=0, redactor=Redactor([KEY]))
    t.write(b"last words sk-an")
    t.close()
    assert path.read_bytes() == b"last words sk-an"


def test_rotation_keeps_backups_and_bounds_sizes(tmp_path: Path) -> None:
    path = tmp_path / "transcript.log"
    t = Transcript(path, max_bytes=1000, backups=3)
    written = b"".join(b"line %04d of agent output\r\n" % i for i in range(400))
    for i in range(0, len(written), 97):
        t.write(written[i : i + 97])
    t.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["transcript.log", "transcript.log.1", "transcript.log.2", "transcript.log.3"]
    assert all(0 < (tmp_path / f).stat().st_size <= 1000 for f in files)
    kept = b"".join((tmp_path / f).read_bytes() for f in reversed(files))
    assert written.endswith(kept)
    assert all(mode(tmp_path / f) == 0o600 for f in files)


class CountingTranscript(Transcript):
    """A transcript that counts its appends to the file (one ``os.write`` loop each)."""

    appends = 0

    def _write(self, data: bytes) -> None:
        self.appends += 1
        super()._write(data)


def test_the_reads_of_a_wakeup_are_redacted_as_one_and_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "transcript.log"
    t = CountingTranscript(path, max_bytes=10_000, backups=1, redactor=Redactor([KEY]))
    data = f"export KEY={KEY}; echo done\n".encode()
    reads = [data[:14], data[14:20], data[20:]]  # the key cut twice
    t.write_reads(reads, data)
    assert t.appends == 1
    t.close()
    assert path.read_bytes() == b"export KEY=***; echo done\n"


def test_reads_that_do_not_fit_are_written_read_by_read_and_rotate_between(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcript.log"
    t = CountingTranscript(path, max_bytes=1000, backups=3)
    written = b"".join(b"line %04d of agent output\r\n" % i for i in range(400))
    reads = [written[i : i + 97] for i in range(0, len(written), 97)]
    for at in range(0, len(reads), 16):  # wakeups of up to 16 reads
        batch = reads[at : at + 16]
        t.write_reads(batch, b"".join(batch))
    t.close()
    assert t.appends == len(reads)  # 16 reads (1,552 bytes) never fit in 1,000
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["transcript.log", "transcript.log.1", "transcript.log.2", "transcript.log.3"]
    assert all(0 < (tmp_path / f).stat().st_size <= 1000 for f in files)
    kept = b"".join((tmp_path / f).read_bytes() for f in reversed(files))
    assert written.endswith(kept)


def test_zero_backups_truncates(tmp_path: Path) -> None:
    path = tmp_path / "transcript.log"
    t = Transcript(path, max_bytes=100, backups=0)
    for i in range(50):
        t.write(b"chunk %02d of output\n" % i)
    t.close()
    assert [p.name for p in tmp_path.iterdir()] == ["transcript.log"]
    assert path.read_bytes().endswith(b"chunk 49 of output\n")
    assert path.stat().st_size <= 100


def test_existing_file_counts_and_a_huge_write_gets_its_own_file(tmp_path: Path) -> None:
    path = tmp_path / "transcript.log"
    path.write_bytes(b"x" * 90)
    path.chmod(0o644)
    t = Transcript(path, max_bytes=100, backups=1)
    t.write(b"y" * 20)  # 90 + 20 > 100: rotate first
    t.write(b"z" * 300)  # larger than max_bytes: alone in a file
    t.close()
    assert Path(f"{path}.1").read_bytes() == b"y" * 20
    assert path.read_bytes() == b"z" * 300
    assert mode(path) == 0o600


def test_a_deleted_or_moved_transcript_is_created_again(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "transcript.log"
    t = Transcript(path, max_bytes=0, backups=0)
    t.write(b"one\n")
    path.unlink()
    t.note("session 2 starting")  # a session boundary looks at once
    t.write(b"two\n")
    assert path.read_bytes().endswith(b"two\n") and b"one" not in path.read_bytes()
    path.rename(tmp_path / "moved.log")  # logrotate's move, then SIGHUP
    t.reopen()
    t.write(b"three\n")
    t.close()
    assert path.read_bytes() == b"three\n"
    assert (tmp_path / "moved.log").read_bytes().endswith(b"two\n")
