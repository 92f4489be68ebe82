#!/usr/bin/env python3
"""Do the presets still read a CLI release? Its message templates against the rules.

usage: python scripts/cli_texts.py [--all] CLI@VERSION... | --cli CLI VERSION...

CLI is claude-code, codex, gemini or aider. For each version: install it into
the test cache (as tests/realcli does: npm, or a venv for aider), take the
message templates out of what it runs (the strings of Claude Code's and
Codex's binaries, Gemini CLI's JavaScript bundle, aider's Python sources) that
hold one of the phrases the presets care about (compaction, context, limits),
fill in their placeholders with sample values (`${n}%` -> `10%`, `resets ${t}` ->
a reset time), and run the preset's sentinels and handoff rule over each.
Prints every template that no rule matches and that is not listed below as
needing none (KNOWN), and exits 1 if there is one: a new or changed text to
look at, then to add to the preset (with an example) or to KNOWN. ``--all``
also prints the templates a rule matches, with the rule.

The templates are found by phrase, not parsed: a text the CLI builds from
pieces may show as its pieces, and a text without any of the phrases is not
looked at. It is a drift alarm for a new release, not a proof: the proof is
tests/realcli, run with the new version (AGENTD_TEST_CLAUDE_CODE=2.1.340 ...).
"""

from __future__ import annotations

import argparse
import mmap
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentd.config.unit import Unit  # noqa: E402
from agentd.supervisor.triggers import rules  # noqa: E402
from agentd.terminal.rules import Rule  # noqa: E402

# The phrases that mark a template worth reading, per CLI.
PHRASES: dict[str, list[str]] = {
    "claude-code": [
        "Compacting conversation",
        "Conversation compacted",
        "Context limit reached",
        "until auto-compact",
        "auto-compact next",
        "% context used",
        "Context low (",
        "You've hit your",
        "You've reached your",
        "You're out of",
        "Your org is out of",
        "Usage is paused",
        "usage limit reached",
        "Request rejected (429)",
        "temporarily limiting requests",
    ],
    "codex": [
        "Context compacted",
        "Compact task completed",
        "Codex ran out of room",
        "exceeds the context window",
        "You’ve hit your usage limit",
        "You've hit your usage limit",
        "Try again at ",
        "try again at ",
        "Quota exceeded. Check",
        "context left",
    ],
    "gemini": [
        "compressed from",
        "compress threshold",
        "might exceed the",
        "maximum number of turns",
        "Usage limit reached",
        "Access resets at",
        "quota limit",
        "% context left",
        "% context used",
    ],
    "aider": [
        "exceeds the",
        "has hit a token limit",
        "rate limited you",
        "not able to authenticate",
        "Permission was denied",
        "Insufficient credits",
        "file not found error",
        "is a directory",
        "unable to read",
        "Retrying in",
    ],
}

# Templates that hold a phrase and need no rule, and why.
KNOWN: dict[str, list[tuple[str, str]]] = {
    "claude-code": [
        (
            r"set to continue automatically|Continuing automatically|Automatic continue",
            "2.1.332's auto-continue notice: the limit line before it pauses the unit",
        ),
        (
            r"Usage limit reached · wrapping up|grace window active|Goal paused · usage limit",
            "shown after the limit line (or to the model)",
        ),
        (r"[Ff]ast limit|fast mode", "fast mode pauses itself: the session goes on"),
        (r"Approaching|You've used|You're close to|You're now using|Now using", "a warning"),
        (r"indicator counts down|Thin clients", "documentation, not shown"),
        (r"requires usage credits", "a model choice, the session goes on"),
        (
            r"^(?:You've hit your|You've reached your|You're out of|Your org is out of)X*$",
            "the start of a composed line: matched when composed",
        ),
        (
            r"^(?:% context used|% until auto-compact|until auto-compact|Context low \(|"
            r"temporarily limiting requests \(not your usage limit\))$",
            "a piece of a composed line, matched whole (`10% until auto-compact`)",
        ),
        (r"limiting requests to the usage page", "the /usage page, not the session"),
        (r"^usage limit reached(?: — check plan)?$", "a background task's status"),
    ],
    "codex": [
        (r"Goal hit usage limits", "the /goal feature's status"),
        (r"^100% context left", "a full context: nothing to do"),
        (r"^context left(?: //)?$", "a piece of the footer's `N% context left`, matched whole"),
    ],
    "gemini": [
        (
            r"Chat history compression (?:did not|failed)|Compression was not beneficial|"
            r"Could not compress|Nothing to compress",
            "a /compress that did nothing",
        ),
        (r"^Usage limit reached for$", "a piece of `Usage limit reached for all Pro models.`"),
        (r"You have exceeded the maximum number of turns\.", "said to a subagent, not shown"),
        (
            r"Switching to the X model for the rest of this session|💡 Tip:",
            "a model fallback or a tip: the session goes on",
        ),
    ],
    "aider": [
        (
            r"^Your estimated chat context of [\d,]+ tokens exceeds the$",
            "the first piece of an f-string split over two lines, matched whole",
        ),
        (
            r"exceeds the (?:max|maximum|limit of)|exceeds the cache|file exceeds",
            "other sizes than the chat's",
        ),
        (r"is a directory|unable to read", "read_text for other files"),
    ],
}

SAMPLE_TIME = {
    "claude-code": "3:45pm (America/Los_Angeles)",
    "codex": "3:45 PM.",
    "gemini": "3:45 PM PST.",
    "aider": "3:45 PM",
}


@dataclass(frozen=True)
class Verdict:
    text: str
    rule: str | None  # the rule that matched, None: no rule
    known: str | None = None  # why no rule is needed


# -- installing ---------------------------------------------------------------------------
def program(cli: str, version: str) -> Path:
    """The installed release (into the test cache, once; a failed install skips,
    as in the tests)."""
    from tests.realcli.install import npm_cli, pip_cli

    if cli == "claude-code":
        return npm_cli("@anthropic-ai/claude-code", version, "claude-code", "claude")
    if cli == "codex":
        return npm_cli("@openai/codex", version, "codex", "codex")
    if cli == "gemini":
        return npm_cli("@google/gemini-cli", version, "gemini-cli", "gemini")
    return pip_cli("aider-chat", version, "aider", "aider")


def sources(cli: str, exe: Path) -> list[Path]:
    """The files the release's texts are in."""
    root = exe.parent.parent  # node_modules/.bin/X -> node_modules; venv/bin/X -> venv
    if cli == "claude-code":
        return sorted(root.glob("@anthropic-ai/claude-code/bin/claude*")) or [exe.resolve()]
    if cli == "codex":
        found = [p for p in root.glob("@openai/codex*/vendor/*/*/codex") if p.is_file()]
        found += [p for p in root.glob("@openai/codex*/vendor/*/codex/codex") if p.is_file()]
        return sorted(set(found))
    if cli == "gemini":
        return sorted(root.glob("@google/gemini-cli/bundle/*.js"))
    return sorted(root.glob("lib/python*/site-packages/aider/**/*.py"))


# -- taking the templates out --------------------------------------------------------------
_QUOTES = b"\"'`"
# Not a message: code, a regular expression, bytes of a compiled constant pool.
_JUNK = re.compile(r"\(\?:|\\b|[\x00-\x08\x0e-\x1f\ufffd]|[{};]\s*(?:if|let|const|return)\b")


def templates(cli: str, files: list[Path]) -> set[str]:
    phrases = re.compile("|".join(re.escape(p) for p in PHRASES[cli]).encode())
    found: set[str] = set()
    for path in files:
        with open(path, "rb") as f:
            try:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file
                continue
            with data:
                for hit in phrases.finditer(data):
                    text = _literal(data, hit.start(), hit.end()) or _run(data, hit.start())
                    if text and not _JUNK.search(text):
                        found.add(_fill(cli, text))
    return found


def _literal(data: mmap.mmap, start: int, end: int) -> str | None:
    """The JS or Python string literal around ``data[start:end]``, unescaped."""
    back = start
    while back > max(0, start - 400) and data[back - 1] not in _QUOTES and data[back - 1] != 10:
        back -= 1
    if back <= 0 or data[back - 1] not in _QUOTES:
        return None
    quote = data[back - 1]
    out = bytearray()
    i = back
    while i < min(len(data), end + 600):
        c = data[i]
        if c == quote:
            # the phrase must lie inside: an apostrophe (You've) is no quote
            return _unescape(bytes(out)) if i >= end else None
        if c == 10 and quote != 96:
            return None
        if c == 92 and i + 1 < len(data):  # a backslash: keep the escape for _unescape
            out += data[i : i + 2]
            i += 2
            continue
        if quote == 96 and data[i : i + 2] == b"${":  # a template's placeholder
            depth, j = 0, i
            while j < len(data):
                depth += {123: 1, 125: -1}.get(data[j], 0)
                j += 1
                if depth == 0:
                    break
            out += data[i:j]
            i = j
            continue
        out.append(c)
        i += 1
    return None


def _unescape(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    text = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)
    text = re.sub(r"\\u\{?([0-9a-fA-F]{4,5})\}?", lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\'", "'").replace('\\"', '"').replace("\\n", " ").replace("\\\\", "\\")


def _run(data: mmap.mmap, start: int) -> str | None:
    """The printable text from ``start`` on (a native binary's string pieces)."""
    raw = bytes(data[start : start + 400])
    text = raw.decode("utf-8", "replace")
    cut = re.search(r"[\x00-\x1f\x7f\ufffd]", text)
    return text[: cut.start()] if cut else text


def _fill(cli: str, text: str) -> str:
    """Sample values for a template's placeholders (``${x}``, Python's ``{x}``)."""
    pattern = r"\$\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}" if cli != "aider" else r"\{[^{}]*\}"

    def sample(m: re.Match[str]) -> str:
        before, after = text[: m.start()], text[m.end() :]
        if after.startswith("%"):
            return "10"
        if re.search(r"(?:resets|reset at|try again at|Access resets at)\s*$", before, re.I):
            return SAMPLE_TIME[cli]
        if re.match(r"\s*(?:tokens?|seconds)\b", after) or re.search(r"(?:from|to|of)\s*$", before):
            if after.lstrip().startswith("seconds"):
                return "8.0"
            return "120,345" if cli == "aider" else "120345"  # aider writes {n:,}
        return "X"

    text = re.sub(pattern, sample, text)
    if re.search(r"(?:[Tt]ry again at|resets at)\s*$", text):  # a piece a time follows
        text = text.rstrip() + " " + SAMPLE_TIME[cli]
    return " ".join(text.split())


# -- judging -------------------------------------------------------------------------------
def preset_rules(cli: str) -> list[Rule]:
    unit = Unit.model_validate({"name": "texts", "preset": cli, "workdir": "/"})
    return rules(unit)


def judge(cli: str, found: set[str]) -> list[Verdict]:
    checks = preset_rules(cli)
    known = [(re.compile(p), why) for p, why in KNOWN[cli]]
    out = []
    for text in sorted(found):
        rule = next((r.name for r in checks if r.pattern.search(text)), None)
        why = None if rule else next((w for p, w in known if p.search(text)), None)
        out.append(Verdict(text, rule, why))
    return out


def check(cli: str, version: str, *, show_all: bool) -> int:
    """Print the verdicts for one release; the number no rule matches and none is known."""
    exe = program(cli, version)
    verdicts = judge(cli, templates(cli, sources(cli, exe)))
    new = [v for v in verdicts if v.rule is None and v.known is None]
    matched = sum(1 for v in verdicts if v.rule)
    print(
        f"{cli}@{version}: {len(verdicts)} templates, {matched} matched by a rule, "
        f"{len(verdicts) - matched - len(new)} known to need none, {len(new)} to look at"
    )
    for v in verdicts:
        if v.rule is None and v.known is None:
            print(f"  NO RULE   {v.text[:200]}")
        elif show_all:
            print(f"  {v.rule or 'known':<24} {v.text[:160]}")
    return len(new)


def _targets(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    for item in args.versions:
        cli, at, version = item.partition("@")
        if at:
            yield cli, version
        elif args.cli:
            yield args.cli, item
        else:
            raise SystemExit(f"cli_texts: {item!r}: give CLI@VERSION, or --cli CLI")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("versions", nargs="+", metavar="CLI@VERSION")
    ap.add_argument("--cli", choices=sorted(PHRASES))
    ap.add_argument("--all", action="store_true", help="also print what the rules match")
    args = ap.parse_args()
    import pytest  # the installer skips with pytest's exception

    missing = 0
    for cli, version in _targets(args):
        if cli not in PHRASES:
            raise SystemExit(f"cli_texts: unknown CLI {cli!r}; one of {', '.join(PHRASES)}")
        try:
            missing += check(cli, version, show_all=args.all)
        except pytest.skip.Exception as exc:
            raise SystemExit(f"cli_texts: {cli}@{version}: {exc}") from None
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
