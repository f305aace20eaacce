"""The one-time split of sessions that older versions merged across agents.

Before session identity was ``(agent, native id)`` (:mod:`cwcore.store.identity`), a second
agent's session with an id already in the store was admitted INTO the first one: a Codex
rollout and an OpenClaw session both ``quote-123`` became one "codex" session holding both
conversations. This upgrade runs once at writable open, before the store serves anything, and
gives each such conversation back its own session:

1. A session's events are the verbatim lines of the files imported into it. Each line is
   classified by the formats' own sniffers (the session's agent first); lines that another
   line-based format claims, and the session's own format does not, are candidates.
2. The candidates are written back as the file they came from (line numbers kept) and parsed by
   their format. The split happens only when that parse, under the old session id, yields
   documents the session really holds — so a line that merely looks foreign moves nothing.
3. The conversation is admitted as its agent's own session (``<agent>:<id>``), events and all;
   each moved document of the old session is superseded with reason ``moved to <agent>:<id>``
   and ``by`` its new document, so a locator or document id a user holds still answers (the
   document, marked superseded, and where it went).
4. One last batch removes the moved lines from the old session's events, takes the moved
   messages out of its counts, and advances the durable cursor.

Steps 2 and 3 are idempotent (admission and supersession skip what is done), and step 4 commits
with the cursor, so a kill at any point resumes with the same session and ends in the same
state. SQLite-backed formats are not split: their events are rows cw wrote, and a second
agent's rows never reached a merged session (admission counted them "unchanged"); importing
them again now creates the second agent's own session.
"""

from __future__ import annotations

import dataclasses
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from cwcore.config import Settings
from cwcore.errors import CwError
from cwcore.importers import base
from cwcore.importers.documents import build_documents, session_counts
from cwcore.importers.summary import ImportSummary
from cwcore.model import ParsedSession, Usage
from cwcore.store import codec, identity, keys, session_order
from cwcore.store.admission import Admission
from cwcore.store.records import DocumentHead, SessionRecord, decode_head, decode_session
from cwcore.store.rocks import Store

__all__ = ["META_KEY", "run"]

META_KEY = "identity-split"
#: Formats never taken for a foreign line: they accept almost any JSON or text.
_PERMISSIVE = {"cw-jsonl", "markdown"}
_FAKE_HOME = Path("/cw-upgrade-home")
#: Events after which a session whose own format claimed none of them is left alone.
_PROBE_LINES = 50
#: The session counts a split moves to the sessions it makes.
_Counted = Literal["messages", "turns", "toolCalls"]


def run(store: Store, admission: Admission, settings: Settings) -> list[str]:
    """Split every merged session not yet looked at; a one-line notice per split."""
    state = store.meta_get(META_KEY) or {}
    if state.get("done"):
        return []
    notes: list[str] = []
    after = state.get("after")
    for sid in _session_ids(store, after):
        record = _record(store, sid)
        if record is not None:
            notes += _split_session(store, admission, settings, sid, record)
        else:
            _advance(store, sid, None, {}, [])
    with store.lock:
        batch = store.batch()
        store.meta_put(batch, META_KEY, {"done": True})
        store.commit(batch)
    return notes


def _session_ids(store: Store, after: str | None) -> Iterator[str]:
    prefix = keys.SESSION.prefix()
    start = keys.SESSION.encode(after) if after else None
    for key, _ in store.scan("scopes", prefix, start=start):
        sid = str(keys.SESSION.decode(key)[0])
        if sid != after:
            yield sid


def _record(store: Store, sid: str) -> SessionRecord | None:
    raw = store.get("scopes", keys.SESSION.encode(sid))
    return None if raw is None else decode_session(raw, identity.session_what(sid))


def _name(importer: base.Importer, native: str) -> str | None:
    if not importer.locations or "/" in native or "\\" in native:
        return None
    return importer.locations[0].names[0].replace("*", native, 1).replace("*", "")


def _fake_path(importer: base.Importer, native: str) -> Path | None:
    """Where ``importer``'s producer would keep session ``native``: sniffers that tell formats
    apart by location (OpenClaw's pi lines) see the place they expect."""
    name = _name(importer, native)
    if name is None:
        return None
    return importer.locations[0].resolve(_FAKE_HOME) / "cw-upgrade" / "sessions" / name


def _neutral_path(importer: base.Importer, native: str) -> Path | None:
    """A path that says nothing about the producer: only the line's shape can claim it."""
    name = _name(importer, native)
    return None if name is None else Path("/cw-upgrade") / name


def _classify(
    store: Store, sid: str, own_agent: str, native: str
) -> dict[str, list[tuple[int, int, bytes]]]:
    """Foreign lines by importer name: ``(seq, line, raw)`` of the events that a line-based
    format other than the session's own claims, and the session's own does not.

    Formats that share a line shape (pi, OpenClaw and Droid write the same ``message``
    entries) are told apart by where the lines came from: the format whose standard location
    on this machine holds a file named with the session's id; else the format that claims the
    lines by their shape alone (pi)."""
    importers = [i for i in base.importers() if i.name not in _PERMISSIVE]
    own = [i for i in importers if i.agent == own_agent]
    others = [i for i in importers if i.agent != own_agent]
    if not own or not others:
        return {}
    own_paths = [(i, p) for i in own for p in (_neutral_path(i, native), _fake_path(i, native))]
    groups: dict[str, list[tuple[int, int, bytes]]] = {}
    placed: dict[str, set[str]] = {}  # group -> formats that claim its lines by location
    claimed = 0
    for number, (key, value) in enumerate(store.scan("events", keys.EVENT.prefix(sid))):
        line, _, _, raw = codec.decode_event(value)
        head = [raw]
        # The session's own format claims nearly every line: asked first, it keeps the scan
        # of a large store to one or two sniffs a line.
        if any(_sniffs(imp, path, head) for imp, path in own_paths):
            claimed += 1
            continue
        if number >= _PROBE_LINES and not claimed:
            return {}  # rows cw wrote for a database format: no line of a file to attribute
        shape = next((i.name for i in others if _sniffs(i, _neutral_path(i, native), head)), None)
        located = {i.name for i in others if _sniffs(i, _fake_path(i, native), head)}
        if shape is None and not located:
            continue
        seq = int(keys.EVENT.decode(key)[1])
        group = shape or sorted(located)[0]
        groups.setdefault(group, []).append((seq, line, raw))
        placed.setdefault(group, set()).update(located)
    out: dict[str, list[tuple[int, int, bytes]]] = {}
    for group, lines in groups.items():
        owners = [n for n in sorted(placed[group] | {group}) if _has_file(base.get(n), native)]
        out[owners[0] if len(owners) == 1 else group] = lines
    return out


def _has_file(importer: base.Importer, native: str) -> bool:
    """Whether one of ``importer``'s standard locations on this machine holds a file whose
    name carries ``native``."""
    for location in importer.locations:
        if not location.applies():
            continue
        root = location.resolve()
        try:
            if root.is_dir() and any(True for _ in root.rglob(f"*{_glob_escape(native)}*")):
                return True
        except OSError:
            continue
    return False


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _sniffs(importer: base.Importer, path: Path | None, head: list[bytes]) -> bool:
    """:func:`base.sniffs` on a path that names no file: a sniffer that looks for the file
    itself (past the head, or a sidecar) finds nothing there and says no."""
    if path is None:
        return False
    try:
        return base.sniffs(importer, path, head)
    except (OSError, UnicodeDecodeError):
        return False


def _split_session(
    store: Store, admission: Admission, settings: Settings, sid: str, record: SessionRecord
) -> list[str]:
    agent = str(record.get("agent") or "")
    native = str(record.get("nativeId") or sid)
    foreign = _classify(store, sid, agent, native) if agent else {}
    notes: list[str] = []
    moved_events: list[tuple[int, bytes]] = []
    removed: dict[str, Any] = {"messages": 0, "turns": 0, "toolCalls": 0, "usage": Usage()}
    for name, lines in foreign.items():
        importer = base.get(name)
        parsed = _reparse(importer, native, lines)
        if parsed is None:
            continue
        moved = _move(store, admission, settings, sid, parsed)
        if not moved:
            continue
        counts = session_counts(parsed)
        for field in ("messages", "turns", "toolCalls"):
            removed[field] += counts[field]
        removed["usage"] += sum((m.usage for m in parsed.messages if m.usage is not None), Usage())
        moved_events += [(seq, raw) for seq, _, raw in lines]
        new_id = identity.session_key(store, native, importer.agent)
        notes.append(
            f"session {sid}: {moved} document(s) of {importer.agent}'s session with the same id "
            f"were merged into it by an earlier cw; they are now session {new_id}"
        )
    _advance(store, sid, record, removed, moved_events)
    return notes


def _reparse(
    importer: base.Importer, native: str, lines: list[tuple[int, int, bytes]]
) -> ParsedSession | None:
    """The foreign lines parsed as the file they came from (each at its own line number), in
    the project their own lines name (document ids do not depend on it)."""
    fake = _fake_path(importer, native)
    if fake is None:
        return None
    by_line = {line: raw for _, line, raw in lines}
    text = b"\n".join(by_line.get(n, b"") for n in range(1, max(by_line) + 1)) + b"\n"
    with tempfile.TemporaryDirectory(prefix="cw-upgrade-") as tmp:
        path = Path(tmp) / fake.relative_to(fake.anchor)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
        try:
            parsed_file = importer.parse(path)
        except Exception:  # an unreadable remnant is left where it is
            return None
    for parsed in parsed_file.sessions:
        if parsed.session_id == native and parsed.messages:
            return dataclasses.replace(parsed, source_path=None)
    return None


def _move(
    store: Store, admission: Admission, settings: Settings, sid: str, parsed: ParsedSession
) -> int:
    """Admit ``parsed`` as its agent's own session and supersede the documents the old
    session holds of it; the number of documents moved (0: the session holds none of it)."""
    old_docs = build_documents(
        dataclasses.replace(parsed, session_id=sid), segment_bytes=settings.segment_bytes
    )
    held = [d for d in old_docs if _head_session(store, d.document_id) == sid]
    if not held:
        return 0
    # Imported late in the pipeline's own way: identity, documents, admission.
    from cwcore.importers.pipeline import admit_parsed

    admit_parsed(admission, parsed, settings, ImportSummary(), "(upgrade)", lambda e: None)
    new_id = identity.session_key(store, parsed.session_id, parsed.agent)
    new_docs = {
        d.parts[0].message_key if d.parts else d.document_id: d.document_id
        for d in build_documents(
            dataclasses.replace(parsed, session_id=new_id), segment_bytes=settings.segment_bytes
        )
    }
    reason = f"moved to {new_id}"
    for doc in held:
        if _head_state(store, doc.document_id) != "live":
            continue  # superseded before (by the source, or by an interrupted run of this)
        first = doc.parts[0].message_key if doc.parts else doc.document_id
        try:
            admission.supersede(doc.document_id, by=new_docs.get(first), reason=reason)
        except CwError:  # no live replacement to name: retire it all the same
            admission.supersede(doc.document_id, reason=reason)
    return len(held)


def _head(store: Store, document_id: str) -> DocumentHead | None:
    raw = store.get("documents", keys.DOC_HEAD.encode(document_id))
    return None if raw is None else decode_head(raw)


def _head_session(store: Store, document_id: str) -> str | None:
    head = _head(store, document_id)
    return None if head is None else str(head["session"])


def _head_state(store: Store, document_id: str) -> str | None:
    head = _head(store, document_id)
    return None if head is None else str(head.get("state", "live"))


def _advance(
    store: Store,
    sid: str,
    record: SessionRecord | None,
    removed: dict[str, Any],
    moved_events: list[tuple[int, bytes]],
) -> None:
    """One batch: the moved lines out of ``sid``'s events, its counts without the moved
    messages, and the cursor past it."""
    with store.lock:
        batch = store.batch()
        if record is not None and moved_events:
            previous = record.copy()
            counted: tuple[_Counted, ...] = ("messages", "turns", "toolCalls")
            for field in counted:
                record[field] = max(0, int(record.get(field, 0)) - int(removed[field]))
            usage = Usage.from_json(record.get("tokens"))
            if usage is not None:
                left = usage - removed["usage"]
                record["tokens"] = Usage(*(max(0, n) for n in dataclasses.astuple(left))).to_json()
            batch.put("scopes", keys.SESSION.encode(sid), codec.encode_record(record))
            session_order.put(batch, record, previous)
            occurrences: dict[bytes, int] = {}
            for seq, raw in moved_events:
                batch.delete("events", keys.EVENT.encode(sid, seq))
                base_digest = keys.digest16(raw)
                n = occurrences.get(base_digest, 0)
                occurrences[base_digest] = n + 1
                digest = keys.digest16(base_digest, struct.pack(">I", n))
                batch.delete("events", keys.EVENT_SOURCE.encode(sid, digest))
        store.meta_put(batch, META_KEY, {"after": sid})
        store.commit(batch)
