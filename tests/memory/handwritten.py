"""A corpus of state written by hand: every layout's files as an agent's own
editor writes them, in many list styles, at any size, in English or Chinese.

``write(state_dir, layout, style, lang, size, order)`` runs ``agentctl state
init --layout LAYOUT``'s function, then writes the layout's files as an agent
following its prompt would ("append new decisions to decisions.md", "update
TASK_STATE.md after each subtask") - not through ``agentctl state``: its own
list style (``STYLES``), its own headings (``## 🎯 Next step:``, ``**Done:**``,
``##下一步``), its own JSON keys (``{"step": ...}``, ``{"title": ..., "why":
...}``), ``size`` items in each record (decisions, done items; gotchas a
third as many), with the sections of its task file in ``order``. Every fact and
item carries a marker (``[mission]``, ``[D0042]``, ``[s0042]``) so that a
bootstrap can be searched for exactly what should be in it; ``Written``
lists them. The person's part (the constraints, the project) is recorded as
readonly as ``agentctl state init`` would.

Used by the corpus tests (``tests/memory/test_own_words.py``) and the memory
benchmark (``scripts/bench_memory.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentd.memory.layout import load_layout
from agentd.memory.verbs.init import init

LAYOUTS = ("agentd", "checkpoint", "contract", "decision-log", "four-file", "memento")
MUST = ("mission", "next", "c1", "c2", "blocker", "handoff")
SECTIONS = ("mission", "task", "done", "next", "blockers", "handoff")  # a task file's, in order


@dataclass(frozen=True)
class Words:
    """One language's words; ``{m}`` is the marker, ``{n}`` a number."""

    mission: str
    constraints: tuple[str, str]
    task: str
    next: str
    done: str
    decision: str
    why: str
    gotcha: str
    blocker: str
    handoff: str
    project: str
    # the task file's section names: several per section, one chosen by the style
    names: dict[str, tuple[str, ...]]
    why_label: str
    date_label: str


EN = Words(
    mission="{m} Move the cart and order services onto one cache layer, public API unchanged",
    constraints=(
        "{m} Never change a controller's method signature",
        "{m} Every Redis key starts with 'v2:'",
    ),
    task="{m} Phase 3: the order module",
    next="{m} Replace Redis call {n} in src/order/service.py, then run the order tests",
    done="{m} Replaced Redis call {n} in src/order/service.py with cache_manager.get_or_load",
    decision="{m} Use cache_manager.get_or_load for call {n}, not a raw client",
    why="the TTL and the key prefix then live in one place",
    gotcha="{m} Restart the dev server after changing tsconfig paths (call {n})",
    blocker="{m} The staging Redis refuses connections from CI",
    handoff="{m} Call {n} is half done: reads use cache_manager, writes not yet",
    project="An online shop: Python services behind a REST API, Redis as the cache.",
    names={
        "mission": ("Mission", "Goal", "Objective"),
        "task": ("Current task", "Current state", "Status"),
        "done": ("Progress", "Done", "Completed", "History", "Done so far"),
        "next": ("Next step", "Next", "Next steps", "Up next", "TODO"),
        "blockers": ("Blockers", "Blocked by", "Open problems"),
        "handoff": ("Handoff", "Interrupted at", "Hand-over"),
    },
    why_label="Why",
    date_label="Date",
)
ZH = Words(
    mission="{m} 把购物车和订单服务迁移到统一的缓存层，不改任何对外接口",
    constraints=("{m} 不得修改 controller 层的方法签名", "{m} 所有 Redis key 前缀统一为 'v2:'"),
    task="{m} 第三阶段：订单模块",
    next="{m} 替换 src/order/service.py 里第 {n} 处 Redis 调用，然后跑订单测试",
    done="{m} 已把 src/order/service.py 里第 {n} 处 Redis 调用换成 cache_manager.get_or_load",
    decision="{m} 第 {n} 处调用改用 cache_manager.get_or_load，不再直接用 Redis 客户端",
    why="TTL 和 key 前缀只在一个地方维护",
    gotcha="{m} 改了 tsconfig 路径别名之后要重启 dev server（第 {n} 处遇到）",
    blocker="{m} 预发环境的 Redis 拒绝 CI 的连接",
    handoff="{m} 第 {n} 处改了一半：读路径已用 cache_manager，写路径还没有",
    project="一个网上商店：Python 服务，对外是 REST 接口，Redis 做缓存。",
    names={
        "mission": ("目标", "任务目标", "目标"),
        "task": ("当前任务", "当前状态", "当前任务"),
        "done": ("进度", "已完成", "完成记录", "历史", "已完成的工作"),
        "next": ("下一步", "下一步计划", "接下来", "待办", "下一步"),
        "blockers": ("卡住的问题", "阻塞", "未解决的问题"),
        "handoff": ("交接", "上次中断时的状态", "交接说明"),
    },
    why_label="理由",
    date_label="日期",
)
LANGS = {"en": EN, "zh": ZH}


# --- the styles: how one item, one heading and one file are written ------------------

Item = Callable[[int, int, str, str], list[str]]  # (k: 1-based, of: count, text, why) -> lines


@dataclass(frozen=True)
class Style:
    item: Item
    heading: Callable[[str], str] = lambda name: f"## {name}"
    newline: str = "\n"
    loose: bool = False  # a blank line after each item
    table: bool = False  # a table: a header row and rule first
    newest_first: bool = False  # the newest item at the top
    json: str = "text"  # how state.json's lists are written (``_json_step``)
    names: int = 0  # which of ``Words.names`` the task file uses


def _plain(bullet: str) -> Item:
    return lambda k, of, text, why: [f"{bullet} {text}"]


def _wide(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "０１２３４５６７８９"))


def _fullwidth_heading(name: str) -> str:
    """``##下一步：`` (no space after the hashes, as Chinese text often has); ``## Next：``."""
    return f"##{name}：" if not name.isascii() else f"## {name}："


STYLES: dict[str, Style] = {
    "dash": Style(_plain("-")),
    "star": Style(_plain("*"), json="strings", names=1),
    "plus": Style(_plain("+"), json="step", names=2),
    "numbered": Style(lambda k, of, t, w: [f"{k}. {t}"], json="title", names=3),
    "paren": Style(lambda k, of, t, w: [f"{k}) {t}"], json="description", names=4),
    "checkbox": Style(lambda k, of, t, w: [f"- [x] {t}"], json="own-keys", names=1),
    "day-tag": Style(lambda k, of, t, w: [f"- [day {k}] {t}"], json="chinese-keys", names=2),
    "continued": Style(
        lambda k, of, t, w: [f"- {t}", f"  because {w}", "  (checked in review)"], names=1
    ),
    "loose": Style(_plain("-"), loose=True, json="strings", names=3),
    "headings": Style(lambda k, of, t, w: [f"### {k}. {t}", "", w], json="title", names=4),
    "crlf": Style(_plain("*"), newline="\r\n", json="step"),
    "fullwidth": Style(
        lambda k, of, t, w: [f"{k}、{t}"], heading=_fullwidth_heading, json="chinese-keys", names=2
    ),
    "fullwidth-digits": Style(
        lambda k, of, t, w: [f"{_wide(k)}．{t}"], heading=lambda n: f"## {n}：", names=1
    ),
    "emoji": Style(
        lambda k, of, t, w: [f"✅ {t}"], heading=lambda n: f"## 🎯 {n}:", json="own-keys"
    ),
    "table": Style(lambda k, of, t, w: [f"| {k} | {t} | {w} |"], table=True, json="description"),
    "paragraphs": Style(lambda k, of, t, w: [t, w, ""], json="title", names=3),
    "newest-first": Style(
        lambda k, of, t, w: [f"{k}. {t}"], newest_first=True, json="strings", names=4
    ),
    "labels": Style(_plain("-"), heading=lambda n: f"**{n}:**", json="step", names=2),
    "h1": Style(_plain("-"), heading=lambda n: f"# {n}", names=0),
}


def list_lines(style: Style, texts: Sequence[str], why: str) -> list[str]:
    """``texts`` (oldest first) as one list in ``style``."""
    order = list(enumerate(texts, start=1))
    if style.newest_first:
        order.reverse()
    out: list[str] = ["| # | item | why |", "|---|---|---|"] if style.table else []
    for k, text in order:
        out += style.item(k, len(texts), text, why)
        if style.loose:
            out.append("")
    while out and not out[-1].strip():
        out.pop()
    return out


# --- what was written, and what a bootstrap should show of it --------------------------


@dataclass
class Written:
    path: Path
    layout: str
    style: Style
    lang: str
    size: int
    must: dict[str, str] = field(default_factory=dict)  # fact -> marker
    records: dict[str, list[str]] = field(default_factory=dict)  # kind -> markers, oldest first


def write(
    state: Path,
    layout: str,
    style: str | Style,
    lang: str,
    size: int,
    order: Sequence[str] = SECTIONS,
) -> Written:
    """The state dir ``state`` as an agent writing by hand leaves it (see the module docstring)."""
    w = LANGS[lang]
    style = STYLES[style] if isinstance(style, str) else style
    if not (state / ".layout").exists():
        init(state, layout)
    out = Written(state, layout, style, lang, size)
    out.must = {f: f"[{f}]" for f in MUST}
    facts = {
        "mission": w.mission.format(m="[mission]"),
        "c1": w.constraints[0].format(m="[c1]"),
        "c2": w.constraints[1].format(m="[c2]"),
        "task": w.task.format(m="[task]"),
        "next": w.next.format(m="[next]", n=size + 1),
        "blocker": w.blocker.format(m="[blocker]"),
        "handoff": w.handoff.format(m="[handoff]", n=size + 1),
    }
    done = [w.done.format(m=f"[s{n:04d}]", n=n) for n in range(size)]
    decisions = [w.decision.format(m=f"[D{n:04d}]", n=n) for n in range(size)]
    out.records = {
        "done items": [f"[s{n:04d}]" for n in range(size)],
        "decisions": [f"[D{n:04d}]" for n in range(size)],
    }
    files = _WRITERS[layout](_Doc(w, style, facts, done, decisions, order, out))
    newline = style.newline
    readonly = {e.path for e in load_layout(layout).files if e.readonly}
    changed = False
    for rel, lines in files.items():
        text = lines if isinstance(lines, str) else newline.join(lines) + newline
        target = state / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        if rel in readonly:
            changed |= not target.is_file() or target.read_bytes() != data
        target.write_bytes(data)
    if changed:
        init(state, None)  # the person's readonly files recorded as they wrote them
    return out


Files = dict[str, "list[str] | str"]


@dataclass
class _Doc:
    """What one state dir is written from."""

    w: Words
    style: Style
    facts: dict[str, str]
    done: list[str]
    decisions: list[str]
    order: Sequence[str]
    out: Written

    def task_file(
        self, order: Sequence[str], title: str, names: dict[str, str] | None = None
    ) -> list[str]:
        """A task file: its sections in ``order``, headed the style's way."""
        w, style, facts = self.w, self.style, self.facts
        named = names or {k: w.names[k][style.names % len(w.names[k])] for k in SECTIONS}
        bodies = {
            "mission": [facts["mission"]],
            "task": [facts["task"]],
            "done": self.listed(self.done),
            "next": [f"- [ ] {facts['next']}"],
            "blockers": [f"- {facts['blocker']}"],
            "handoff": [facts["handoff"]],
        }
        out = [f"# {title}", ""]
        for key in order:
            out += [style.heading(named[key]), "", *bodies[key], ""]
        return out

    def listed(self, texts: Sequence[str], why: str | None = None) -> list[str]:
        return list_lines(self.style, texts, self.w.why if why is None else why)

    def constraints(self, title: str = "Constraints") -> list[str]:
        return [f"# {title}", "", *self.listed([self.facts["c1"], self.facts["c2"]], "")]

    def decisions_md(self) -> list[str]:
        return ["# Decisions", "", *self.listed(self.decisions)]

    def log(self) -> list[str]:
        """decisions.log appended by hand (``echo ... >> decisions.log``), in the style."""
        return self.listed(self.decisions)

    def state_json(self, layout: str) -> str:
        w, facts = self.w, self.facts
        steps = [_json_step(self.style, t, w.why, n) for n, t in enumerate(self.done)]
        chosen = [_json_step(self.style, t, w.why, n) for n, t in enumerate(self.decisions)]
        own = self.style.json == "own-keys"
        data: dict[str, object]
        if layout == "checkpoint":
            data = {"task": facts["mission"], "status": facts["task"], "next": facts["next"]}
            data["blocked_by"] = [facts["blocker"]]
            data["done" if own else "completed"] = steps
            return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        data = {"mission": facts["mission"], "task": facts["task"]}
        if own:  # the agent's own keys, not the schema's
            data |= {"next_steps": [facts["next"]], "done": steps, "decisions": chosen}
        else:
            data |= {"next_action": facts["next"], "completed_steps": steps}
            if layout == "memento":
                data["key_decisions"] = chosen
        data["blockers"] = [facts["blocker"]]
        data["handoff"] = facts["handoff"]
        if layout == "memento":
            data["constraints"] = [facts["c1"], facts["c2"]]
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _json_step(style: Style, text: str, why: str, n: int) -> object:
    return {
        "text": {"text": text, "verified": "pytest tests/order -q"},
        "strings": text,
        "step": {"step": text, "done_at": f"2026-12-01 10:{n % 60:02d}"},
        "title": {"title": text, "date": f"2026-12-{1 + n % 28:02d}", "why": why},
        "description": {"description": text, "status": "done"},
        "own-keys": {"what": text, "result": "ok"},
        "chinese-keys": {"内容": text, "原因": why},
    }[style.json]


def _agentd(d: _Doc) -> Files:
    return {
        "constraints.md": d.constraints(),
        "state.json": d.state_json("agentd"),
        "decisions.log": d.log(),
    }


def _memento(d: _Doc) -> Files:
    return {"state.json": d.state_json("memento")}


CONTRACT_NAMES = {
    "mission": "CURRENT",
    "task": "CURRENT",
    "done": "DONE",
    "next": "NEXT",
    "blockers": "BLOCKERS",
    "handoff": "HANDOFF",
}


def _contract(d: _Doc) -> Files:
    names = CONTRACT_NAMES
    if d.style.names % 2:  # the style's own spelling of the names: `Done`, not `DONE`
        names = {k: v.capitalize() for k, v in names.items()}
    order = [k for k in d.order if k != "task"]
    return {
        "PROJECT_CONTRACT.md": ["# PROJECT CONTRACT", "", "## SUMMARY", "", *d.constraints()[2:]],
        "TASK_STATE.md": d.task_file(order, "TASK STATE", names),
        "decisions.log": d.log(),
    }


def _four_file(d: _Doc) -> Files:
    return {
        "constraints.md": d.constraints("Hard constraints"),
        "task_state.md": d.task_file(d.order, "Task state"),
        "decisions.md": d.decisions_md(),
    }


def _decision_log(d: _Doc) -> Files:
    return {
        "current-task.md": d.task_file([k for k in d.order if k != "done"], "Current task"),
        "constraints.md": d.constraints(),
        "decisions.log": d.log(),
        "recent-summary.md": ["# Recent summary", "", *d.listed(d.done)],
    }


def _checkpoint(d: _Doc) -> Files:
    w = d.w
    gotchas = [w.gotcha.format(m=f"[g{n:04d}]", n=n) for n in range(max(len(d.done) // 3, 1))]
    d.out.records["gotchas"] = [f"[g{n:04d}]" for n in range(len(gotchas))]
    latest = _Doc(w, d.style, d.facts, d.done[-5:], [], d.order, d.out)
    return {
        "state/project.md": ["# Project", "", w.project],
        "state/constraints.md": d.constraints(),
        "state/decisions.md": d.decisions_md(),
        "state/state.json": d.state_json("checkpoint"),
        "state/gotchas.md": ["# Known gotchas", "", *d.listed(gotchas)],
        "checkpoints/latest.md": latest.task_file(
            [k for k in d.order if k not in ("mission", "task")], "CHECKPOINT"
        ),
    }


_WRITERS: dict[str, Callable[[_Doc], Files]] = {
    "agentd": _agentd,
    "checkpoint": _checkpoint,
    "contract": _contract,
    "decision-log": _decision_log,
    "four-file": _four_file,
    "memento": _memento,
}


# --- what a bootstrap shows of it ---------------------------------------------------


@dataclass
class Shown:
    must: dict[str, bool]  # fact -> shown
    recall: dict[str, int]  # record kind -> how many of its 10 newest are shown
    of: dict[str, int]  # record kind -> 10, or fewer when it holds fewer
    tokens: int
    budget: int
    text: str
    account: list[str]  # `--explain`'s rows, for a failure's message

    def misses(self, slack: float = 1.05) -> list[str]:
        """What falls short of the targets: every fact, 9 of the 10 newest of
        each record (all of them when it has fewer), within the budget (``slack``)."""
        out = [f"fact {f} not shown" for f, ok in self.must.items() if not ok]
        out += [
            f"{k}: {n}/{self.of[k]} newest"
            for k, n in self.recall.items()
            if n < self.of[k] - (self.of[k] == 10)
        ]
        if self.tokens > self.budget * slack:
            out.append(f"{self.tokens} tokens over the budget {self.budget}")
        return out


def shown(written: Written, budget: int = 3000, now: float = 1_764_513_120.0) -> Shown:
    """The next session's bootstrap of ``written`` (the real renderer), and what it keeps."""
    from agentd.memory.bootstrap.render import BootstrapContext, render
    from agentd.memory.layout import load_layout

    ctx = BootstrapContext(
        "corpus",
        2,
        "sentinel:compaction",
        written.path,
        written.path.parent,
        load_layout(written.layout).files,
        budget,
        now,
    )
    boot = render(ctx)
    text = boot.text
    recall = {
        kind: sum(marker in text for marker in markers[-10:])
        for kind, markers in written.records.items()
    }
    rows = [
        f"{r.name} {r.keep} {r.tokens}/{round(r.total)}: {'; '.join(r.notes)}" for r in boot.account
    ]
    return Shown(
        {fact: marker in text for fact, marker in written.must.items()},
        recall,
        {kind: len(markers[-10:]) for kind, markers in written.records.items()},
        boot.tokens,
        budget,
        text,
        rows,
    )
