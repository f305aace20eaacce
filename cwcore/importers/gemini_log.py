"""Replaying a Gemini CLI chat recording: the upsert log and the legacy single-object file.

:class:`UpsertLog` applies the records of a ``session-*.jsonl`` in order, as gemini-cli's
``loadConversationRecord`` does: a message record with a known id replaces that message (keeping
its place), ``$set`` patches the session metadata, ``$rewindTo`` takes the target and every later
active message off the active branch (an unknown target clears it). :func:`read_legacy` reads the
records of an older ``session-*.json`` object with their start lines. Turning records into
messages is :mod:`cwcore.importers.gemini`'s job.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from cwcore.importers.common import Line, native_id

#: Record types of a Gemini chat recording.
RECORD_TYPES = frozenset({"user", "gemini", "model", "info", "error", "warning"})
#: JSON tokens the legacy-shape scan needs: strings and structure (numbers and literals are
#: skipped; an unterminated string at the end of a cut prefix simply matches nothing).
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')
#: How many ``messages`` elements the shape scan looks at.
_SHAPE_RECORDS = 4


@dataclass
class LegacyShape:
    """What a bounded prefix of a legacy ``.json`` file shows: whether it opens an object, its
    top-level keys, and the string fields of the first elements of its ``messages`` list.
    Key order plays no part (``jq -S`` puts ``messages`` before ``sessionId``)."""

    is_object: bool = False
    keys: set[str] = field(default_factory=set)
    records: list[dict[str, str]] = field(default_factory=list)

    def gemini_records(self) -> list[dict[str, str]]:
        return [r for r in self.records if r.get("type") in RECORD_TYPES and "role" not in r]

    def conclusive(self) -> bool:
        return self.is_object and (
            {"sessionId", "projectHash"} <= self.keys or len(self.records) >= _SHAPE_RECORDS
        )

    def accepts(self) -> bool:
        """What the format must have: an object with a session id or project hash and
        messages, or a ``messages`` list of Gemini records (a forced ``--format gemini``)."""
        if not self.is_object:
            return False
        if "sessionId" in self.keys and self.keys & {"projectHash", "messages"}:
            return True
        return "messages" in self.keys and bool(self.gemini_records())

    def sniff(self, under_gemini: bool) -> bool:
        """Auto-detection: the metadata keys, or Gemini records that only Gemini writes (a
        ``gemini`` record, a project hash, or a file under ``.gemini``)."""
        if not self.accepts():
            return False
        if "sessionId" in self.keys and self.keys & {"projectHash", "messages"}:
            return True
        typed = {r.get("type") for r in self.gemini_records()}
        return bool(typed & {"gemini", "model"}) or "projectHash" in self.keys or under_gemini


def legacy_shape(data: bytes) -> LegacyShape:
    """Scan a (possibly cut) prefix of a JSON text for the legacy file's shape."""
    shape = LegacyShape()
    start = data.lstrip()
    if start.startswith(b"\xef\xbb\xbf"):
        start = start[3:].lstrip()
    if not start.startswith(b"{"):
        return shape
    shape.is_object = True
    stack: list[bytes] = []
    expect_key = False
    top_key = ""
    key = ""
    record: dict[str, str] | None = None
    for match in _TOKEN.finditer(start):
        token = match.group()
        if token in (b"{", b"["):
            if token == b"{" and stack == [b"{", b"["] and top_key == "messages":
                if len(shape.records) >= _SHAPE_RECORDS:
                    break
                record = {}
                shape.records.append(record)
            stack.append(token)
            expect_key = token == b"{"
        elif token in (b"}", b"]"):
            if stack:
                stack.pop()
            if len(stack) < 3:
                record = None
            expect_key = False
            if not stack:
                break
        elif token == b",":
            expect_key = bool(stack) and stack[-1] == b"{"
        elif token == b":":
            expect_key = False
        else:
            try:
                text = json.loads(token)
            except ValueError:
                continue
            if expect_key:
                key = text
                if len(stack) == 1:
                    top_key = text
                    shape.keys.add(text)
                expect_key = False
            elif record is not None and len(stack) == 3 and isinstance(text, str):
                record[key] = text
        if shape.conclusive():
            break
    return shape


@dataclass
class Record:
    """The latest version of one message id, and every line that wrote it."""

    key: str
    obj: dict[str, Any]
    lines: list[int]
    parent: str | None  # the active record before this one when it first appeared
    call_lines: dict[str, int] = field(default_factory=dict)  # call id -> first line
    result_lines: dict[str, int] = field(default_factory=dict)


@dataclass
class UpsertLog:
    """Replays the upsert log: records, active order, rewinds, metadata."""

    records: dict[str, Record] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    active: list[str] = field(default_factory=list)
    off: set[str] = field(default_factory=set)
    alias: dict[str, str] = field(default_factory=dict)  # source id -> current record key
    meta: dict[str, Any] = field(default_factory=dict)
    context_rewrites: int = 0

    def accept(self, number: int, obj: dict[str, Any]) -> str:
        """Apply one record at line ``number``; return why it cannot be read ('' when fine)."""
        if "$rewindTo" in obj:
            target = obj["$rewindTo"]
            key = self.alias.get(target, target) if isinstance(target, str) else None
            cut = self.active.index(key) if key in self.active else 0
            self.off.update(self.active[cut:])
            del self.active[cut:]
            return ""
        if "$set" in obj:
            patch = obj["$set"]
            if not isinstance(patch, dict):
                return "'$set' must be an object"
            if "messages" in patch:
                self.context_rewrites += 1
            self.meta.update({k: v for k, v in patch.items() if k != "messages"})
            return ""
        if "id" not in obj:
            if isinstance(obj.get("sessionId"), str):
                self.meta.update({k: v for k, v in obj.items() if k != "messages"})
                return ""
            if obj.get("type") not in RECORD_TYPES:
                return "not a Gemini record (no id, sessionId, $set or $rewindTo)"
        # A record without an id (some writers leave it out) is its own message at its line.
        source_id = native_id(obj.get("id")) if "id" in obj else f"L{number}"
        if source_id is None:
            return "message 'id' is not a usable id"
        if not isinstance(obj.get("type"), str):
            return "message record without a 'type'"
        key = self.alias.get(source_id, source_id)
        record = self.records.get(key)
        if record is not None and key in self.off:
            # The id was rewound and is written again: a new message on the active branch.
            n = sum(1 for k in self.records if k.startswith(f"{source_id}#r")) + 1
            key = self.alias[source_id] = f"{source_id}#r{n}"
            record = None
        if record is None:
            record = self.records[key] = Record(
                key, obj, [], self.active[-1] if self.active else None
            )
            self.order.append(key)
            self.active.append(key)
        record.obj = obj
        record.lines.append(number)
        for call in obj.get("toolCalls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                record.call_lines.setdefault(call["id"], number)
                if call.get("result") is not None:
                    record.result_lines.setdefault(call["id"], number)
        return ""


def event_type(obj: dict[str, Any]) -> str:
    if "$rewindTo" in obj:
        return "$rewindTo"
    if "$set" in obj:
        return "$set"
    return str(obj.get("type") or "metadata")


def read_legacy(raw: bytes) -> tuple[list[Line], dict[str, Any], list[tuple[int, str]]]:
    """Message records of a legacy single-object file with their start lines, the top-level
    fields, and a problem if the object breaks off (records before the break are kept)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], {}, [(1, f"not UTF-8: {exc}")]
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    decoder = json.JSONDecoder()
    records: list[Line] = []
    header: dict[str, Any] = {}

    def line_of(pos: int) -> int:
        return bisect_right(newlines, pos - 1) + 1

    def skip(pos: int) -> int:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    pos = skip(0)
    try:
        if text[pos] != "{":
            return [], {}, [(line_of(pos), "not a JSON object")]
        pos = skip(pos + 1)
        while text[pos] != "}":
            key, pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = skip(pos + 1)
            if key == "messages" and text[pos] == "[":
                pos = skip(pos + 1)
                while text[pos] != "]":
                    start = pos
                    value, pos = decoder.raw_decode(text, pos)
                    if isinstance(value, dict):
                        body = text[start:pos].encode("utf-8", "surrogatepass")
                        records.append(Line(line_of(start), body, value))
                    pos = skip(pos)
                    pos = skip(pos + 1) if text[pos] == "," else pos
                pos += 1
            else:
                header[key], pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            pos = skip(pos + 1) if text[pos] == "," else pos
    except (ValueError, IndexError, RecursionError) as exc:
        reason = "file ends inside the JSON object" if isinstance(exc, IndexError) else str(exc)
        return records, header, [(line_of(min(pos, len(text))), f"not JSON: {reason}")]
    return records, header, []
