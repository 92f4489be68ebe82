"""Grow a state dir the way N sessions of an agent would, for ``bench_memory.py``.

Every write goes through the functions behind ``agentctl state`` (``targets.apply``
on the layout's targets, ``record.own_record``, ``decisions.format_line``,
``handoffs.take``), on one in-memory ``Docs`` saved at the end, so that 1,000
sessions take seconds instead of a million fsyncs. Per session, as an agent
following its bootstrap's rules would:

- agentd starts it: the handoff it was shown moves to history;
- the agent does the next action and records it done (crossing it off), plus
  two more done items, all verified; one decision (``decisions.log`` and the
  layout's own record); a new next action; three lines of scratch; a gotcha
  every third session (checkpoint); a blocker every 100th; a new task every
  100th; and a dated handoff at the end.

Every text carries a marker (``[D0042]``, ``[s0042.2]``) so that the bootstrap
can be searched for exactly what should be in it; ``Grown`` lists them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from agentd.memory.formats.decisions import Decision, format_line
from agentd.memory.layout import load_layout
from agentd.memory.verbs import handoffs
from agentd.memory.verbs.init import init
from agentd.memory.verbs.ops import Docs, StateDir, stamp
from agentd.memory.verbs.record import LOG, own_record
from agentd.memory.verbs.targets import apply

START = 1_764_500_000.0  # 2025-11-30, the first session's start
SESSION_S = 20 * 60  # one session: twenty minutes
SCRATCH = {"agentd": "scratch.md", "contract": "SCRATCH.md", "four-file": "scratchpad.md"}
GOTCHAS = "state/gotchas.md"
CONSTRAINTS = {
    "agentd": "constraints.md",
    "decision-log": "constraints.md",
    "four-file": "constraints.md",
    "checkpoint": "state/constraints.md",
}


@dataclass
class Texts:
    """The words of one language; ``{m}`` is the marker, ``{n}`` a number."""

    mission: str
    constraints: tuple[str, str]
    task: str
    next: str
    done: str
    verified: str
    decision: str
    why: str
    scratch: str
    gotcha: str
    blocker: str
    handoff: str
    project: str


EN = Texts(
    mission="{m} Move the shop's cart and order services onto one cache layer without changing "
    "any public API, with the test suite green at every step",
    constraints=(
        "{m} Never change a controller's method signature",
        "{m} Every Redis key starts with 'v2:'; never write a key without the prefix",
    ),
    task="{m} Phase {n}: replace the direct Redis calls in the order module",
    next="{m} Replace the Redis call number {n} in src/order/service.py and run the order tests",
    done="{m} Replaced Redis call {n} in src/order/service.py with cache_manager.get_or_load",
    verified="pytest tests/order -q: 48 passed",
    decision="{m} Use cache_manager.get_or_load for call {n} rather than a raw client",
    why="because the TTL and the key prefix then live in one place, so a change is one edit",
    scratch="call {n}: order_service line {n} still builds its own key; check the TTL there",
    gotcha="- {m} Restart the dev server after changing tsconfig paths (seen in session {n})",
    blocker="{m} The staging Redis refuses connections from CI since session {n}",
    handoff="{m} Call {n} is half done: the read path uses cache_manager, the write path not "
    "yet; the order tests were not run after the last edit",
    project="An online shop: Python 3.11 services (cart, order, payment) behind a REST API, "
    "Redis as the cache, PostgreSQL as the store; tests with pytest.",
)
ZH = Texts(
    mission="{m} 把购物车和订单服务迁移到统一的缓存层，不改任何对外接口，每一步测试都保持通过",
    constraints=(
        "{m} 不得修改 controller 层的方法签名",
        "{m} 所有 Redis key 前缀统一为 'v2:'，不允许写没有前缀的 key",
    ),
    task="{m} 第 {n} 阶段：替换订单模块里直接调用 Redis 的地方",
    next="{m} 替换 src/order/service.py 里第 {n} 处 Redis 调用，然后跑订单模块的测试",
    done="{m} 已把 src/order/service.py 里第 {n} 处 Redis 调用换成 cache_manager.get_or_load",
    verified="pytest tests/order -q：48 个全部通过",
    decision="{m} 第 {n} 处调用改用 cache_manager.get_or_load，不再直接用 Redis 客户端",
    why="因为 TTL 和 key 前缀只在一个地方维护，所以以后修改只需改一处",
    scratch="第 {n} 处：order_service 第 {n} 行还在自己拼 key，要检查那里的 TTL",
    gotcha="- {m} 改了 tsconfig 路径别名之后要重启 dev server（第 {n} 轮遇到）",
    blocker="{m} 从第 {n} 轮起，预发环境的 Redis 拒绝 CI 的连接",
    handoff="{m} 第 {n} 处改了一半：读路径已用 cache_manager，写路径还没有；最后一次修改后"
    "还没跑订单测试",
    project="一个网上商店：Python 3.11 的购物车、订单、支付服务，对外是 REST 接口，Redis "
    "做缓存，PostgreSQL 存数据，测试用 pytest。",
)
LANGS = {"en": EN, "zh": ZH}


@dataclass
class Grown:
    """A state dir grown so far, and the markers the next bootstrap should show."""

    path: Path
    layout: str
    sessions: int = 0
    must: dict[str, str] = field(default_factory=dict)  # fact -> marker
    records: dict[str, list[str]] = field(default_factory=dict)  # kind -> markers, oldest first


class Grower:
    def __init__(self, path: Path, layout: str, lang: str) -> None:
        self.t = LANGS[lang]
        self.layout = load_layout(layout)
        init(path, layout)
        self.sd = StateDir(path, self.layout, "recorded")
        self.docs = Docs(self.sd)
        self.log: list[str] = []
        self.history: list[str] = []
        self.grown = Grown(path, layout, records={"decisions": [], "done items": []})
        if layout == "checkpoint":
            self.grown.records["gotchas"] = []
        self._by_hand(path)
        self.next = ""
        self.last = 0

    def _by_hand(self, path: Path) -> None:
        """What a person writes before leaving the agent alone: mission, constraints."""
        t, verbs = self.t, self.layout.state
        now = START - 3600
        c1, c2 = (c.format(m=f"[c{i}]") for i, c in enumerate(t.constraints, 1))
        self.grown.must.update(mission="[mission]", c1="[c1]", c2="[c2]")
        assert verbs.mission is not None
        apply(self.docs, verbs.mission, t.mission.format(m="[mission]"), now)
        name = self.layout.name
        if name == "memento":
            self.docs.json("state.json")["constraints"] = [c1, c2]
        elif name == "contract":
            lines = self.docs.lines("PROJECT_CONTRACT.md")
            at = lines.index("## SUMMARY") + 1
            self.docs.set_lines(
                "PROJECT_CONTRACT.md", [*lines[:at], "", f"- {c1}", f"- {c2}", *lines[at + 3 :]]
            )
        else:
            self.docs.set_lines(CONSTRAINTS[name], ["# Constraints", "", f"- {c1}", f"- {c2}"])
        if name == "checkpoint":
            self.docs.set_lines("state/project.md", ["# Project", "", t.project])
        self.docs.save()
        init(path, None)  # records the readonly files as the person wrote them

    def session(self, s: int) -> None:
        t, verbs, docs = self.t, self.layout.state, self.docs
        now = START + s * SESSION_S
        os.environ["AGENTD_SESSION"] = str(s)
        if moved := handoffs.take(docs):  # agentd, as it starts session s
            self.history.append(handoffs.history_entry(moved, s, now))
        if s == 1 or s % 100 == 0:
            assert verbs.task is not None
            apply(docs, verbs.task, t.task.format(m=f"[t{s:04d}]", n=s // 100 + 1), now)
            if verbs.task_switch_decision:
                self._decide(s, now, f"[T{s:04d}] switch to task {s // 100 + 1}")
        assert verbs.done is not None and verbs.next is not None
        done = [self.next] if self.next else []
        done += [t.done.format(m=f"[s{s:04d}.{k}]", n=s * 3 + k) for k in (1, 2)]
        for text in done:
            apply(docs, verbs.done, text, now, verified=t.verified)
            self.grown.records["done items"].append(text.split("]")[0] + "]")
        self._decide(s, now, t.decision.format(m=f"[D{s:04d}]", n=s))
        self.next = t.next.format(m=f"[n{s:04d}]", n=s)
        apply(docs, verbs.next, self.next, now)
        self.grown.must["next"] = f"[n{s:04d}]"
        if rel := SCRATCH.get(self.layout.name):
            lines = docs.lines(rel)
            docs.set_lines(rel, [*lines, *(t.scratch.format(n=s * 3 + k) for k in range(3))])
        if self.layout.name == "checkpoint" and s % 3 == 0:
            docs.set_lines(GOTCHAS, [*docs.lines(GOTCHAS), t.gotcha.format(m=f"[g{s:04d}]", n=s)])
            self.grown.records["gotchas"].append(f"[g{s:04d}]")
        if s % 100 == 0 or s == self.last:
            assert verbs.block is not None
            apply(docs, verbs.block, t.blocker.format(m=f"[b{s:04d}]", n=s), now)
            self.grown.must["blocker"] = f"[b{s:04d}]"
        assert verbs.handoff is not None
        text = t.handoff.format(m=f"[h{s:04d}]", n=s)
        apply(
            docs,
            verbs.handoff,
            text if verbs.handoff.form == "checkpoint" else handoffs.dated(text, now),
            now,
        )
        self.grown.must["handoff"] = f"[h{s:04d}]"
        self.grown.sessions = s

    def _decide(self, s: int, now: float, text: str) -> None:
        d = Decision(
            at=stamp(now),
            decision=text,
            why=self.t.why,
            files="src/order/service.py",
            snapshot=f"snapshot-{len(self.log) + 1:03d}",
            tag="arch",
        )
        self.log.append(format_line(d))
        own_record(self.docs, d, now)
        self.grown.records["decisions"].append(text.split("]")[0] + "]")

    def grow(self, sessions: int) -> Grown:
        """Sessions up to ``sessions`` (from where the last call stopped), saved to disk."""
        self.last = sessions
        for s in range(self.grown.sessions + 1, sessions + 1):
            self.session(s)
        self._save()
        return self.grown

    def _save(self) -> None:
        self.docs.save()
        path = self.sd.path
        (path / LOG).write_text("\n".join(self.log) + "\n", encoding="utf-8")
        (path / handoffs.HISTORY).write_text("\n\n".join(self.history) + "\n", encoding="utf-8")
        snap = path / "snapshots" / f"snapshot-{len(self.log):03d}.json"
        snap.parent.mkdir(exist_ok=True)
        snap.write_text(
            json.dumps(
                {
                    "time": stamp(START),
                    "decision": self.log[-1][:200],
                    "task": None,
                    "head": None,
                    "files": {},
                },
                ensure_ascii=False,
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
