#!/usr/bin/env python3
"""The memory benchmark: does the bootstrap keep what matters as the state grows?

usage: python scripts/bench_memory.py [--sessions 10,100,1000] [--budget 3000]
                                      [--jobs 2] [--json FILE] [--markdown] [--keep]

For every layout preset and both languages (English, Chinese), a state dir is
grown as 10, 100 and 1,000 sessions of an agent would grow it
(``bench_memory_grow.py``: decisions, done items, handoffs, scratch, gotchas,
blockers, never archived), and the bootstrap of the next session is rendered
with the real ``agentd.memory.bootstrap.render.render``. Reported per layout and size:

- must-have facts shown: the mission, the next action, the two constraints,
  the newest blocker and the last session's handoff (6);
- newest-10 recall for each record kind: how many of the 10 newest decisions,
  done items (and gotchas, checkpoint) are in the bootstrap;
- the bootstrap's tokens against the budget, and the render time.

Targets (exit status 1 when one is missed): every must-have fact, at least 9
of the 10 newest decisions and of the 10 newest done items, tokens within the
budget + 5%, for every layout at every size.
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

MUST = ("mission", "next", "c1", "c2", "blocker", "handoff")
RECALL_TARGET = 9
SLACK = 1.05


def measure(grown: Any, budget: int) -> dict[str, Any]:
    """Render the next session's bootstrap from ``grown`` and count what it shows."""
    from agentd.memory.layout import load_layout

    ctx = BootstrapContext(
        "bench",
        grown.sessions + 1,
        "exit:42",
        grown.path,
        grown.path.parent,
        load_layout(grown.layout).files,
        budget,
        time.time(),
    )
    start = time.perf_counter()
    boot = render(ctx)
    ms = (time.perf_counter() - start) * 1000
    text = boot.text
    must = {fact: grown.must[fact] in text for fact in MUST}
    recall = {
        kind: sum(m in text for m in markers[-10:]) for kind, markers in grown.records.items()
    }
    biggest = sorted((r for r in boot.account if r.keep != "fixed"), key=lambda r: -r.tokens)
    return {
        "must": sum(must.values()),
        "must_of": len(must),
        "missing": [f for f, ok in must.items() if not ok],
        "recall": recall,
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
        result = measure(grower.grow(size), budget)
        rows.append({"layout": layout, "lang": lang, "sessions": size, **result})
    print(
        f"bench_memory: {layout} {lang}: {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True
    )
    return rows


def run(sizes: list[int], budget: int, root: Path, jobs: int) -> list[dict[str, Any]]:
    """Every layout in both languages, ``jobs`` at a time (the Markdown layouts'
    1,000 sessions take a minute or two each: every verb rewrites its file)."""
    work = [(layout, lang, sizes, budget, root) for layout in preset_names() for lang in LANGS]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(one, *zip(*work, strict=True)))
    return [row for rows in done for row in rows]


def ok(row: dict[str, Any]) -> bool:
    recall = row["recall"]
    return (
        row["must"] == row["must_of"]
        and recall["decisions"] >= RECALL_TARGET
        and recall["done items"] >= RECALL_TARGET
        and row["tokens"] <= row["budget"] * SLACK
    )


def table(rows: list[dict[str, Any]], *, markdown: bool) -> str:
    """One line per layout and size, English / Chinese side by side."""
    head = [
        "layout",
        "sessions",
        "must-have facts",
        "10 newest decisions",
        "10 newest done",
        "10 newest gotchas",
        "tokens (budget)",
        "render ms",
        "target",
    ]
    lines = [head]
    pairs: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in rows:
        pairs.setdefault((r["layout"], r["sessions"]), {})[r["lang"]] = r

    def both(key: Any) -> str:
        return " / ".join(str(key(lang_row)) for lang_row in pair.values())

    for (layout, size), pair in pairs.items():
        lines.append(
            [
                layout,
                f"{size:,}",
                both(lambda r: f"{r['must']}/{r['must_of']}"),
                both(lambda r: r["recall"]["decisions"]),
                both(lambda r: r["recall"]["done items"]),
                both(lambda r: r["recall"].get("gotchas", "-")),
                both(lambda r: r["tokens"]) + f" ({next(iter(pair.values()))['budget']})",
                both(lambda r: r["render_ms"]),
                "pass" if all(ok(r) for r in pair.values()) else "**miss**",
            ]
        )
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
        return "\n".join(out + ["| " + " | ".join(row) + " |" for row in lines[1:]])
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in lines
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", default="10,100,1000", help="comma-separated sizes")
    ap.add_argument("--budget", type=int, default=3000, help="the bootstrap's token budget")
    ap.add_argument("--json", type=Path, help="also write the results as JSON to FILE")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--keep", action="store_true", help="keep the grown state dirs")
    ap.add_argument("--jobs", type=int, default=2, help="layouts grown at once (default 2)")
    args = ap.parse_args(argv)
    sizes = sorted(int(s) for s in args.sessions.split(","))
    root = Path(tempfile.mkdtemp(prefix="agentd-bench-memory-"))
    try:
        rows = run(sizes, args.budget, root, args.jobs)
    finally:
        if args.keep:
            print(f"bench_memory: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("(English / Chinese)")
    print(table(rows, markdown=args.markdown))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    missed = [r for r in rows if not ok(r)]
    for r in missed:
        print(
            f"miss: {r['layout']} {r['lang']} {r['sessions']}: missing {r['missing']}, "
            f"recall {r['recall']}, {r['tokens']} tokens; top: {r['top']}",
            file=sys.stderr,
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
