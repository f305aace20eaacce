"""Import throughput per source format: the demo sessions, replicated, through the pipeline.

Run: ``make bench`` (all benches) or ``.venv/bin/python -m bench importers``.

For each format (claude-code, codex, pi, gemini, cw-jsonl) the bundled demo sessions
(``cwcore/demo/``) are copied until there are about ``messages_per_format`` messages. Every copy
gets fresh ids: each UUID in a file (and its name) is rewritten deterministically per copy, so a
copy is a new session, not an unchanged re-import that admission would skip. cw-jsonl has no demo
file of its own; its input is the demo's messages converted to the interchange format.

Each format is imported by ``import_paths`` (detect, parse, scrub, build documents, admit) into
its own temporary store. Beside it, in the same run and over the same bytes: the importer's parse
and scrub alone (no documents, no store) and plain ``json.loads`` of every line, the floor any
JSONL importer in Python stands on.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import peak_rss_mb, print_table, timed, write_result
from cwcore.config import Settings
from cwcore.importers import base, scrub
from cwcore.importers.pipeline import import_paths
from cwcore.model import ParsedSession
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store

DEMO = Path(__file__).resolve().parent.parent / "cwcore" / "demo"

#: format -> the demo sub-folder holding its sessions in the agent's own layout.
SOURCES = {"claude-code": "claude", "codex": "codex", "pi": "pi", "gemini": "gemini"}
FORMATS = (*SOURCES, "cw-jsonl")

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NS = uuid.UUID("3b0c8d52-5a1e-4f4e-9b7a-2f6c0e9d1a77")


@dataclass(frozen=True)
class Template:
    relpath: str  # path under the demo folder, agent layout kept (Gemini needs ``chats/``)
    data: bytes
    messages: int


@dataclass
class Corpus:
    root: Path
    files: list[Path]
    messages: int
    sessions: int
    source_bytes: int


def _parse(fmt: str, path: Path) -> list[ParsedSession]:
    parsed = base.get(fmt).parse(path)
    if parsed.problems:  # the demo is meant to be clean; a problem would skew the counts
        raise RuntimeError(f"{path}: {parsed.problems[:3]}")
    return list(parsed.sessions)


def _templates(fmt: str) -> list[Template]:
    folder = DEMO / SOURCES[fmt]
    out = []
    for path in sorted(folder.rglob("*.jsonl")):
        messages = sum(len(s.messages) for s in _parse(fmt, path))
        out.append(Template(path.relative_to(folder).as_posix(), path.read_bytes(), messages))
    if not out:
        raise RuntimeError(f"no {fmt} sessions under {folder}")
    return out


def _renamer(copy: int) -> Callable[[re.Match[bytes]], bytes]:
    """Map each UUID to a copy-specific one, the same everywhere in the copy (links hold)."""
    seen: dict[bytes, bytes] = {}

    def rename(match: re.Match[bytes]) -> bytes:
        old = match.group(0)
        new = seen.get(old)
        if new is None:
            new = str(uuid.uuid5(_NS, f"{copy}:{old.decode()}")).encode()
            seen[old] = new
        return new

    return rename


def replicate(fmt: str, root: Path, target: int) -> Corpus:
    """Copies of the demo sessions of ``fmt`` under ``root`` until ``target`` messages."""
    templates = _templates(fmt)
    per_round = sum(t.messages for t in templates)
    copies = math.ceil(target / per_round)
    files: list[Path] = []
    size = 0
    for copy in range(copies):
        rename = _renamer(copy)
        for t in templates:
            data = _UUID.sub(rename, t.data)
            # A copy folder keeps names unique where the name holds no full UUID (Gemini).
            rel = _UUID.sub(rename, t.relpath.encode()).decode()
            path = root / f"copy-{copy:04d}" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            files.append(path)
            size += len(data)
    return Corpus(root, files, per_round * copies, len(templates) * copies, size)


def _cw_jsonl_rows() -> list[dict[str, Any]]:
    """The demo's messages (all four agent formats) as cw-jsonl rows (BRIEF §3)."""
    rows: list[dict[str, Any]] = []
    for fmt, folder in SOURCES.items():
        for path in sorted((DEMO / folder).rglob("*.jsonl")):
            for session in _parse(fmt, path):
                for m in session.messages:
                    row: dict[str, Any] = {
                        "session": session.session_id,
                        "id": m.message_id,
                        "role": m.role,
                        "text": m.text,
                        "timestamp": m.timestamp,
                        "project": session.project,
                        "agent": session.agent,
                    }
                    if m.parent_id:
                        row["parent"] = m.parent_id
                    if m.tool_name:
                        row["tool_name"] = m.tool_name
                    if m.tool_call_id:
                        row["tool_call_id"] = m.tool_call_id
                    tool_input = json.loads(m.tool_input) if m.tool_input else None
                    if isinstance(tool_input, dict):  # cw-jsonl takes objects; patches stay text
                        row["tool_input"] = tool_input
                    rows.append(row)
    return rows


def replicate_cw_jsonl(root: Path, target: int) -> Corpus:
    """One interchange file holding copies of the demo conversation, sessions renamed."""
    rows = _cw_jsonl_rows()
    copies = math.ceil(target / len(rows))
    path = root / "archive.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    sessions = 0
    with path.open("w", encoding="utf-8") as fh:
        for copy in range(copies):
            names: dict[str, str] = {}
            for row in rows:
                old = row["session"]
                if old not in names:
                    names[old] = str(uuid.uuid5(_NS, f"{copy}:{old}"))
                fh.write(json.dumps({**row, "session": names[old]}, ensure_ascii=False) + "\n")
            sessions += len(names)
    return Corpus(root, [path], len(rows) * copies, sessions, path.stat().st_size)


def _lines(corpus: Corpus) -> list[bytes]:
    return [ln for f in corpus.files for ln in f.read_bytes().splitlines() if ln.strip()]


def _parse_and_scrub(fmt: str, corpus: Corpus) -> int:
    importer = base.get(fmt)
    messages = 0
    for path in corpus.files:
        for session in importer.parse(path).sessions:
            messages += len(scrub.scrub_session(session).messages)
    return messages


def measure(fmt: str, tmp: Path, target: int) -> dict[str, Any]:
    src = tmp / "src" / fmt
    corpus = replicate_cw_jsonl(src, target) if fmt == "cw-jsonl" else replicate(fmt, src, target)
    lines = _lines(corpus)

    # The floor: decoding every line, nothing else.
    _, json_seconds = timed(lambda: [json.loads(ln) for ln in lines])
    parsed_messages, parse_seconds = timed(lambda: _parse_and_scrub(fmt, corpus))

    store = Store(tmp / "store" / fmt)
    settings = Settings()
    summary, seconds = timed(
        lambda: import_paths(Admission(store), [corpus.root], fmt="auto", settings=settings)
    )
    store.flush()
    disk = store.size_on_disk()
    store.close()
    if summary.errors or summary.messages != corpus.messages or parsed_messages != corpus.messages:
        raise RuntimeError(
            f"{fmt}: expected {corpus.messages} messages, imported {summary.messages}, "
            f"parsed {parsed_messages}, errors {[e.to_json() for e in summary.errors[:3]]}"
        )
    return {
        "files": len(corpus.files),
        "sessions": summary.sessions,
        "messages": corpus.messages,
        "lines": len(lines),
        "source_bytes": corpus.source_bytes,
        "documents": summary.imported,
        "seconds": round(seconds, 3),
        "messages_per_s": round(corpus.messages / seconds),
        "parse_scrub": {
            "seconds": round(parse_seconds, 3),
            "messages_per_s": round(corpus.messages / parse_seconds),
        },
        "json_loads": {
            "seconds": round(json_seconds, 4),
            "lines_per_s": round(len(lines) / json_seconds),
            "messages_per_s": round(corpus.messages / json_seconds),
        },
        "disk_bytes": disk,
    }


def run(messages_per_format: int = 10_000) -> dict[str, Any]:
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in FORMATS:
            results[fmt] = measure(fmt, Path(tmp), messages_per_format)
    body = {
        "messages_per_format": messages_per_format,
        "source": "cwcore/demo sessions, replicated with fresh ids",
        "formats": results,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "target_messages_per_s": 2000,
    }
    rows: list[tuple[str, ...]] = []
    for fmt, r in results.items():
        json_rate = r["json_loads"]["messages_per_s"]
        rows.append(
            (
                fmt,
                f"{r['sessions']:,}",
                f"{r['messages']:,}",
                f"{r['lines']:,}",
                f"{r['messages_per_s']:,}",
                f"{r['parse_scrub']['messages_per_s']:,}",
                f"{json_rate:,}",
                f"{json_rate / r['messages_per_s']:.0f}x",
            )
        )
    print_table(
        f"importers: ~{messages_per_format:,} messages per format (demo sessions, fresh ids)",
        rows,
        (
            "format",
            "sessions",
            "messages",
            "lines",
            "import msgs/s",
            "parse+scrub msgs/s",
            "json.loads msgs/s",
            "json/import",
        ),
    )
    path = write_result("importers", body)
    print(
        f"import = detect+parse+scrub+documents+admit into a fresh store; peak RSS "
        f"{body['peak_rss_mb']} MB; written {path}"
    )
    return body
