#!/usr/bin/env python3
"""The memory benchmark: does the bootstrap keep what matters as the state grows?

usage: python scripts/bench_memory.py [--sessions 10,100,1000] [--items 10,300,3000]
                                      [--only grown|hand] [--budget 3000] [--jobs 2]
                                      [--json FILE] [--markdown] [--styles] [--keep]

For every layout preset and both languages (English, Chinese), a state dir is
grown as 10, 100 and 1,000 sessions of an agent would grow it through the
state verbs (``bench_memory_grow.py``: decisions, done items, handoffs,
scratch, gotchas, blockers, never archived); and, as the agent's own editor
writes it, in every list style of the hand-written corpus
(``tests/memory/handwritten.py``: ``- ``, ``* ``, ``1)``, checkboxes, heading
entries, tables, paragraphs, CRLF, full-width forms, newest first...) with
10, 300 and 3,000 items in each record. The bootstrap of the next session is
rendered with the real ``agentd.memory.bootstrap.render.render``. Reported per
layout and size (the hand-written rows: the worst of all styles; ``--styles``
prints each style's):

- must-have facts shown: the mission, the next action, the two constraints,
  the newest blocker and the last session's handoff (6);
- newest-10 recall for each record kind: how many of the 10 newest decisions,
  done items (and gotchas, checkpoint) are in the bootstrap;
- the bootstrap's tokens against the budget, and the render time.

Targets (exit status 1 when one is missed): every must-have fact, at least 9
of the 10 newest decisions and of the 10 newest done items (and gotchas, by
hand; all of them when there are fewer), tokens within the budget + 5%, for
every layout at every size, in every style.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_memory_grow import LANGS, Grower

from agentd.memory.bootstrap.render import BootstrapContext, render
from agentd.memory.layout import preset_names
from tests.memory import handwritten

MUST = ("mission", "next", "c1", "c2", "blocker", "handoff")
RECALL_TARGET = 9
SLACK = 1.05


def measure(
    path: Path,
    layout: str,
    session: int,
    must: dict[str, str],
    records: dict[str, list[str]],
    budget: int,
) -> dict[str, Any]:
    """Render the next session's bootstrap of the state dir ``path`` and count
    what it shows of ``must`` and of the newest ``records`` (markers)."""
    from agentd.memory.layout import load_layout

    ctx = BootstrapContext(
        "bench",
        session,
        "exit:42",
        path,
        path.parent,
        load_layout(layout).files,
        budget,
        time.time(),
    )
    start = time.perf_counter()
    boot = render(ctx)
    ms = (time.perf_counter() - start) * 1000
    text = boot.text
    shown = {fact: must[fact] in text for fact in MUST}
    recall = {kind: sum(m in text for m in markers[-10:]) for kind, markers in records.items()}
    biggest = sorted((r for r in boot.account if r.keep != "fixed"), key=lambda r: -r.tokens)
    return {
        "must": sum(shown.values()),
        "must_of": len(shown),
        "missing": [f for f, ok in shown.items() if not ok],
        "recall": recall,
        "recall_of": {kind: len(markers[-10:]) for kind, markers in records.items()},
        "tokens": boot.tokens,
        "budget": budget,
        "render_ms": round(ms, 1),
        "warnings": boot.warnings,
        "top": [f"{r.name} {r.tokens}" for r in biggest[:2]],
    }


def one(layout: str, lang: str, sizes: list[int], budget: int, root: Path) -> list[dict[str, Any]]:
    """Grow one layout's state dir in one language through ``sizes``, measuring at each."""
    t0 = time.monotonic()
    grower = Grower(root / f"{layout}-{lang}" / ".agent", layout, lang)
    rows = []
    for size in sizes:
        g = grower.grow(size)
        result = measure(g.path, g.layout, g.sessions + 1, g.must, g.records, budget)
        rows.append({"layout": layout, "lang": lang, "by": "agentctl", "size": size, **result})
    print(
        f"bench_memory: {layout} {lang}: {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True
    )
    return rows


def by_hand(
    layout: str, lang: str, sizes: list[int], budget: int, root: Path
) -> list[dict[str, Any]]:
    """One layout in one language written by hand in every style, at each size."""
    t0 = time.monotonic()
    rows = []
    for style in handwritten.STYLES:
        path = root / f"hand-{layout}-{style}-{lang}" / ".agent"
        for size in sizes:
            w = handwritten.write(path, layout, style, lang, size)
            result = measure(path, layout, 2, w.must, w.records, budget)
            rows.append(
                {"layout": layout, "lang": lang, "by": "hand", "style": style, "size": size}
                | result
            )
    print(
        f"bench_memory: {layout} {lang} by hand: {time.monotonic() - t0:.1f}s",
        file=sys.stderr,
        flush=True,
    )
    return rows


def run(
    sessions: list[int], items: list[int], only: str | None, budget: int, root: Path, jobs: int
) -> list[dict[str, Any]]:
    """Every layout in both languages, ``jobs`` at a time (the Markdown layouts'
    1,000 sessions take a minute or two each: every verb rewrites its file)."""
    work = []
    for layout in preset_names():
        for lang in LANGS:
            if only != "hand":
                work.append((one, layout, lang, sessions, budget, root))
            if only != "grown":
                work.append((by_hand, layout, lang, items, budget, root))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(_call, work))
    return [row for rows in done for row in rows]


def _call(job: tuple[Any, ...]) -> list[dict[str, Any]]:
    fn, *args = job
    rows: list[dict[str, Any]] = fn(*args)
    return rows


def ok(row: dict[str, Any]) -> bool:
    """Every fact, 9 of the 10 newest of each record (all when fewer), the budget."""
    recall, of = row["recall"], row["recall_of"]
    kinds = recall if row["by"] == "hand" else ("decisions", "done items")
    return (
        row["must"] == row["must_of"]
        and all(recall[k] >= of[k] - (of[k] == 10) for k in kinds)
        and row["tokens"] <= row["budget"] * SLACK
    )


HEAD = [
    "layout",
    "written by",
    "size",
    "must-have facts",
    "10 newest decisions",
    "10 newest done",
    "10 newest gotchas",
    "tokens (budget)",
    "render ms",
    "target",
]


def _worst(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst of ``rows`` (one language, every style): fewest facts and
    newest items, most tokens and render time."""
    kinds = {k for r in rows for k in r["recall"]}
    return {
        "must": min(r["must"] for r in rows),
        "must_of": rows[0]["must_of"],
        "recall": {k: min(r["recall"].get(k, 10) for r in rows) for k in kinds},
        "tokens": max(r["tokens"] for r in rows),
        "budget": rows[0]["budget"],
        "render_ms": max(r["render_ms"] for r in rows),
        "ok": all(ok(r) for r in rows),
    }


def table(rows: list[dict[str, Any]], *, markdown: bool, styles: bool = False) -> str:
    """One line per layout, writer and size (English / Chinese side by side);
    the hand-written rows are the worst of every style, or one a style (``styles``)."""
    groups: dict[tuple[str, str, str, int], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        by = (
            "agentctl state"
            if r["by"] == "agentctl"
            else f"by hand, {len(handwritten.STYLES)} styles"
        )
        if styles and r["by"] == "hand":
            by = f"by hand: {r['style']}"
        unit = "sessions" if r["by"] == "agentctl" else "items"
        key = (r["layout"], by, unit, r["size"])
        groups.setdefault(key, {}).setdefault(r["lang"], []).append(r)
    lines = [HEAD]
    for (layout, by, unit, size), langs in sorted(groups.items(), key=lambda kv: _order(kv[0])):
        worst = [_worst(rs) for rs in langs.values()]

        def both(key: Any, worst: list[dict[str, Any]] = worst) -> str:
            return " / ".join(str(key(w)) for w in worst)

        lines.append(
            [
                layout,
                by,
                f"{size:,} {unit}",
                both(lambda w: f"{w['must']}/{w['must_of']}"),
                both(lambda w: w["recall"]["decisions"]),
                both(lambda w: w["recall"]["done items"]),
                both(lambda w: w["recall"].get("gotchas", "-")),
                both(lambda w: w["tokens"]) + f" ({worst[0]['budget']})",
                both(lambda w: w["render_ms"]),
                "pass" if all(w["ok"] for w in worst) else "**miss**",
            ]
        )
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
        return "\n".join(out + ["| " + " | ".join(row) + " |" for row in lines[1:]])
    widths = [max(len(row[i]) for row in lines) for i in range(len(HEAD))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in lines
    )


def _order(key: tuple[str, str, str, int]) -> tuple[str, bool, str, int]:
    layout, by, _, size = key
    return layout, not by.startswith("agentctl"), by, size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", default="10,100,1000", help="sessions grown (comma-separated)")
    ap.add_argument("--items", default="10,300,3000", help="items written by hand in each record")
    ap.add_argument("--only", choices=["grown", "hand"], help="only one of the two writers")
    ap.add_argument("--budget", type=int, default=3000, help="the bootstrap's token budget")
    ap.add_argument("--json", type=Path, help="also write the results as JSON to FILE")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--styles", action="store_true", help="one row per hand-written style")
    ap.add_argument("--keep", action="store_true", help="keep the state dirs")
    ap.add_argument("--jobs", type=int, default=2, help="layouts written at once (default 2)")
    args = ap.parse_args(argv)
    sessions = sorted(int(s) for s in args.sessions.split(","))
    items = sorted(int(s) for s in args.items.split(","))
    root = Path(tempfile.mkdtemp(prefix="agentd-bench-memory-"))
    try:
        rows = run(sessions, items, args.only, args.budget, root, args.jobs)
    finally:
        if args.keep:
            print(f"bench_memory: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("(English / Chinese)")
    print(table(rows, markdown=args.markdown, styles=args.styles))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    missed = [r for r in rows if not ok(r)]
    for r in missed:
        print(
            f"miss: {r['layout']} {r['by']} {r.get('style', '')} {r['lang']} {r['size']}: "
            f"missing {r['missing']}, recall {r['recall']}, {r['tokens']} tokens; top: {r['top']}",
            file=sys.stderr,
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
