"""The JSON of the Archive methods outside retrieval, pinned to a golden file.

Index status, supersede, forget, doctor, sources, preflight, hints and memory answers are a
contract (``--json`` of every CLI command, the MCP tools, the daemon protocol): the typed
results that carry them from the engine to the faces must serialize to exactly the JSON the
engine answered before they existed — the same keys with the same values (compared as parsed
JSON: key order is the codec's, issue 37).
Each answer is taken from the raw method table (``Archive.call``) and the typed wrapper's
``to_json()`` must equal it; the raw answers together must match the golden file line for line.
Timings and disk sizes are zeroed and store paths replaced before comparing (the clock is
fixed by ``CW_NOW``).

Regenerate after a deliberate change of the JSON: ``CW_UPDATE_GOLDEN=1 pytest tests/results``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cwcore.api import Archive
from cwcore.contract.index import IndexStatus
from cwcore.contract.preflight import PreflightDecision
from cwcore.contract.supersession import Superseded
from cwtui.demo import DEMO_DIR
from tests.helpers import write_jsonl
from tests.hints.helpers import row
from tests.results import canonical

GOLDEN = Path(__file__).parent / "golden"
NEVER = {"semanticPolicy": "never"}
#: Timings (any ``…Ms`` / ``…_ms`` key) and on-disk sizes vary run to run.
VOLATILE = ("ms", "seconds", "disk")


def _volatile(key: str) -> bool:
    return key in VOLATILE or key.endswith(("Ms", "_ms"))


def _normal(value: Any, home: str) -> Any:
    if isinstance(value, str):
        return value.replace(home, "<home>")
    if isinstance(value, list):
        return [_normal(v, home) for v in value]
    if isinstance(value, dict):
        return {k: (0 if _volatile(k) else _normal(v, home)) for k, v in value.items()}
    return value


def _text(value: Any, home: str) -> str:
    return canonical(_normal(value, home))


class Answers:
    """The raw answers in order, each checked against its typed wrapper's ``to_json()``."""

    def __init__(self, archive: Archive, home: Path) -> None:
        self.archive = archive
        self.home = str(home)
        self.rows: list[tuple[str, Any]] = []

    def add(
        self,
        label: str,
        method: str,
        params: dict[str, Any],
        typed: Callable[[], Any] | None = None,
        change: Callable[[], Any] | None = None,
    ) -> dict[str, Any]:
        """Record the raw answer of ``method``; ``typed`` (a read) must answer the same, once
        more. A ``change`` cannot run twice: it runs instead of the raw call, and its answer's
        ``to_json()`` is what the golden file pins."""
        raw = change().to_json() if change is not None else self.archive.call(method, params)
        if typed is not None:
            got = typed()
            got = got.to_json() if hasattr(got, "to_json") else got
            # Canonical text: dictionary equality would take 1 for 1.0 and True.
            assert _text(got, self.home) == _text(raw, self.home), label
        self.rows.append((label, raw))
        return raw

    def check(self, name: str) -> None:
        text = "".join(
            json.dumps({"label": label, "answer": _normal(raw, self.home)}, ensure_ascii=False)
            + "\n"
            for label, raw in self.rows
        )
        path = GOLDEN / f"{name}.jsonl"
        if os.environ.get("CW_UPDATE_GOLDEN"):
            path.write_text(text, encoding="utf-8")
        expected = path.read_text(encoding="utf-8").splitlines()
        got = text.splitlines()
        for i, (line, want) in enumerate(zip(got, expected, strict=False)):
            assert canonical(json.loads(line)) == canonical(json.loads(want)), (
                f"{name} answer {i} ({self.rows[i][0]}) differs"
            )
        assert len(got) == len(expected)


def _hits(archive: Archive, query: str, limit: int = 3) -> list[dict[str, Any]]:
    return list(archive.call("search", {"query": query, "limit": limit, **NEVER})["results"])


def test_index_supersede_forget_and_doctor_json_is_unchanged(
    archive: Archive, cw_home: Path
) -> None:
    a = archive
    out = Answers(a, cw_home)
    a.import_paths([DEMO_DIR])
    out.add("index.run", "index.run", {"wait": True}, lambda: a.index_run(wait=True))
    out.add("index.status", "index.status", {}, lambda: a.index_status())
    [hit] = _hits(a, "ERR_LEASE_EXPIRED", limit=1)
    [newer] = _hits(a, "retry", limit=1)
    doc = hit["documentId"]
    session = hit["source"]["sessionId"]
    out.add("index.status doc", "index.status", {"document": doc}, lambda: a.index_status(doc))
    out.add(
        "index.partial",
        "index.partial",
        {"limit": 5, "after": 0},
        lambda: a.index_partial(limit=5, after=0),
    )
    out.add("index.verify", "index.verify", {}, lambda: a.index_verify())
    out.add("doctor", "doctor", {"repair": False}, lambda: a.doctor())
    out.add("forget.resolve", "forget.resolve", {"target": session, "prefix": False})
    out.add(
        "forget.resolve doc",
        "forget.resolve",
        {"target": doc, "prefix": False},
        lambda: a.forget_target(doc),
    )
    out.add(
        "forget.resolve prefix",
        "forget.resolve",
        {"target": session[:8], "prefix": True},
    )
    sup = {"documentId": doc, "by": newer["documentId"], "reason": "golden"}
    raw = a.call("supersede", sup)
    assert Superseded.from_json(raw).to_json() == raw
    out.rows.append(("supersede", raw))
    out.add(
        "index.status superseded",
        "index.status",
        {"document": doc},
        lambda: a.index_status(doc),
    )
    undo = {"documentId": doc, "reason": "back"}
    out.add(
        "supersede.undo", "supersede.undo", undo, None, lambda: a.unsupersede(doc, reason="back")
    )
    out.add("supersede bare", "supersede", {"documentId": doc}, None, lambda: a.supersede(doc))
    out.add(
        "supersede.undo bare",
        "supersede.undo",
        {"documentId": doc},
        None,
        lambda: a.unsupersede(doc),
    )
    out.add(
        "index.rebuild", "index.rebuild", {"wait": True}, None, lambda: a.index_rebuild(wait=True)
    )
    out.add("doctor repair", "doctor", {"repair": True}, lambda: a.doctor(repair=True))
    out.add("sources", "sources", {"home": str(cw_home)}, lambda: a.sources(home=str(cw_home)))
    gone = newer["documentId"]
    out.add("forget doc", "forget", {"target": gone}, None, lambda: a.forget(gone))
    out.add("forget session", "forget", {"target": session}, None, lambda: a.forget(session))
    out.add("index.status after", "index.status", {}, lambda: a.index_status())
    for _, raw in out.rows:
        if "generation" in raw and "outbox" in raw:  # every index status round-trips
            assert IndexStatus.from_json(raw).to_json() == raw
    out.check("archive")


ROWS = [
    row("s1", "u1", "user", "Why does the reaper crash with REAP_DRAIN in src/reaper/drain.py?"),
    row("s1", "a1", "assistant", "REAP_DRAIN prevents accepting new work while the pool drains."),
    row("s1", "u2", "user", "Please switch the pool to bounded queues.", minute=2),
    row("s1", "a2", "assistant", "We use bounded queues with a capacity of 64 jobs.", minute=3),
    row("s1", "u3", "user", "The scheduler misses heartbeats when GC pauses.", minute=4),
    row("s1", "a3", "assistant", "Heartbeat timers now run on a dedicated thread.", minute=5),
    row("s2", "u1", "user", "Starting a fork about zebra stripes.", days=1, parent_session="s1"),
]


def test_hints_and_memory_json_is_unchanged(
    archive: Archive, cw_home: Path, tmp_path: Path
) -> None:
    a = archive
    out = Answers(a, cw_home)
    rows = ROWS
    a.import_paths([write_jsonl(tmp_path / "h.jsonl", rows)])
    a.index_run(wait=True)
    for label, params in (
        (
            "preflight",
            {"message": "what did we decide about REAP_DRAIN last time?", "session": "s2"},
        ),
        ("preflight none", {"message": "hello there", "session": "s2"}),
        (
            "preflight keyed",
            {
                "message": "remember the bounded queues capacity?",
                "session": "s2",
                "messageKey": "k1",
                "maxResults": 2,
                "hintBudgetTokens": 300,
                "excludeVisibleSourceKeys": ["nothing"],
            },
        ),
    ):
        raw = out.add(label, "preflight", params)
        assert _text(PreflightDecision.from_json(raw).to_json(), out.home) == _text(raw, out.home)
    out.add("hints", "hints", {"limit": 1000}, lambda: a.hints(limit=1000))
    out.add(
        "hints session",
        "hints",
        {"limit": 10, "session": "s2"},
        lambda: a.hints(limit=10, session="s2"),
    )
    for view in ("retrieved", "manifest", "included", "excluded", "memory"):
        out.add(
            f"hints {view}",
            "hints",
            {"limit": 10, "session": "s2", "view": view},
            lambda view=view: a.hints(limit=10, session="s2", view=view),
        )
    out.add(
        "hints excluded all",
        "hints",
        {"limit": 10, "view": "excluded", "all": True},
        lambda: a.hints(limit=10, view="excluded", everything=True),
    )
    out.add(
        "hints.rotate",
        "hints.rotate",
        {"session": "s2", "active": []},
        None,
        lambda: a.hints_rotate("s2", []),
    )
    out.add("hints.maintain", "hints.maintain", {}, None, lambda: a.hints_maintain())
    out.add(
        "hints.maintain limit",
        "hints.maintain",
        {"limit": 3},
        None,
        lambda: a.hints_maintain(limit=3),
    )
    first = out.add(
        "memory.add",
        "memory.add",
        {},
        None,
        lambda: a.memory_add(
            "Always rebase before merging",
            ruleType="convention",
            confidence=0.9,
            layer="L2",
            scope="project:alpha",
            tags=["git"],
            doesNotApplyWhen=["hotfix"],
            knownExceptions=["release branches"],
        ),
    )
    plain = out.add(
        "memory.add plain", "memory.add", {}, None, lambda: a.memory_add("Queues hold 64 jobs")
    )
    out.add(
        "memory.add supersedes",
        "memory.add",
        {},
        None,
        lambda: a.memory_add("Rebase, then merge", supersedes=first["id"]),
    )
    out.add("memory.list", "memory.list", {}, lambda: a.memory_list())
    out.add(
        "memory.list filtered",
        "memory.list",
        {"status": "active", "limit": 1},
        lambda: a.memory_list(status="active", limit=1),
    )
    out.add("memory.show", "memory.show", {"id": first["id"]}, lambda: a.memory_show(first["id"]))
    out.add(
        "memory.contest",
        "memory.contest",
        {},
        None,
        lambda: a.memory_contest(plain["id"], reason="unsure"),
    )
    out.add(
        "memory.deprecate", "memory.deprecate", {}, None, lambda: a.memory_deprecate(plain["id"])
    )
    prompt = "how many jobs do the queues hold?"
    out.add(
        "memory.context",
        "memory.context",
        {"prompt": prompt, "session": "today", "project": "alpha"},
        lambda: a.memory_context(prompt, session="today", project="alpha"),
    )
    out.add(
        "bound.sessions",
        "bound.sessions",
        {"project": "alpha"},
        lambda: a.bound_sessions("alpha"),
    )
    out.add(
        "bound.messages",
        "bound.messages",
        {"session": "s1", "project": "alpha", "from": 1},
        lambda: a.bound_messages("s1", project="alpha"),
    )
    out.add(
        "bound.memory",
        "bound.memory",
        {"prompt": prompt, "project": "alpha"},
        lambda: a.bound_memory(prompt, project="alpha"),
    )
    out.check("hints")
