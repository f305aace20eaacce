"""Plumbing the agent-log importers share: reading JSONL, ids, times, text and tool inputs.

Contracts every importer relies on:

* :func:`read_jsonl` never raises for a bad line. A blank line is skipped silently; a line that is
  not a JSON object (including a truncated last line, invalid UTF-8, JSON nested deeper than the
  parser's recursion limit, or a line over :data:`~cwcore.store.limits.MAX_LINE_BYTES`) becomes a
  ``(line, reason)`` problem and is skipped, and the rest of the file is read.
* :class:`Sink` keeps source message ids unique within a session: a second message with an id
  already used is refused and reported as a problem instead of silently shadowing the first.
* Ids taken from a source pass :func:`~cwcore.store.keys.check_id` (:func:`native_id`), so a
  hostile id is a problem at import, never a rejected document at admission.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cwcore.clock import iso, parse_time
from cwcore.errors import CwError, excerpt
from cwcore.importers.lines import Overlong, iter_lines
from cwcore.model import Message
from cwcore.store.keys import check_id

#: Where no project can be derived from the source.
DEFAULT_PROJECT = "default"


@dataclass(frozen=True)
class Line:
    """One readable JSONL record: its 1-based line number, exact bytes and decoded object."""

    number: int
    raw: bytes
    obj: dict[str, Any]


def read_jsonl(path: Path) -> tuple[list[Line], list[tuple[int, str]]]:
    """Every JSON-object line of ``path`` and the problems of the others (see module doc)."""
    lines: list[Line] = []
    problems: list[tuple[int, str]] = []
    for number, raw, obj, reason in jsonl_records(path):
        if obj is None:
            problems.append((number, reason))
        else:
            lines.append(Line(number, raw, obj))
    return lines, problems


def jsonl_records(path: Path) -> Iterator[tuple[int, bytes, dict[str, Any] | None, str]]:
    """``(number, raw, object, "")`` for each JSON-object line of ``path``, ``(number, raw,
    None, reason)`` for any other non-blank line. Lines over the line limit are read in bounded
    blocks and never held (their ``raw`` is empty)."""
    with path.open("rb") as fh:
        for number, line in iter_lines(fh):
            if isinstance(line, Overlong):
                yield number, b"", None, line.reason()
                continue
            raw = line.rstrip(b"\r")
            if not raw.strip():
                continue
            obj, reason = decode_object(raw)
            yield number, raw, obj, reason


def decode_object(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """``(object, "")`` for a JSON object line, else ``(None, reason)``."""
    try:
        value = json.loads(raw)
    except RecursionError:
        return None, "not JSON: nested too deeply"
    except ValueError as exc:  # includes UnicodeDecodeError and JSONDecodeError
        return None, f"not JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"not a JSON object: {type(value).__name__}"
    return value, ""


def native_id(value: object) -> str | None:
    """``value`` if it is a string usable as a source message id, else None."""
    try:
        return check_id(value, "id")
    except CwError:
        return None


@dataclass
class Sink:
    """Collects a session's messages in order, refusing duplicate ids (reported as problems)."""

    messages: list[Message] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)

    def add(self, message: Message) -> bool:
        if message.message_id in self.ids:
            line = message.lines[0] if message.lines else 0
            self.problems.append((line, f"duplicate message id {excerpt(message.message_id)}"))
            return False
        self.ids.add(message.message_id)
        self.messages.append(message)
        return True

    @property
    def last_id(self) -> str | None:
        """The last message that a following one continues (thinking continues nothing)."""
        for message in reversed(self.messages):
            if message.kind != "thinking":
                return message.message_id
        return None


def norm_time(value: object) -> str | None:
    """An ISO-8601 UTC timestamp from an ISO string or epoch milliseconds; None if unreadable."""
    try:
        if isinstance(value, str) and value.strip():
            return iso(parse_time(value))
        if isinstance(value, int | float) and not isinstance(value, bool):
            return iso(datetime.fromtimestamp(value / 1000, UTC))
    except (CwError, ValueError, OverflowError, OSError):
        return None
    return None


def canonical_json(value: Any) -> str:
    """Stable JSON text for a tool input: sorted keys, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def tool_call_text(value: Any) -> str:
    """The searchable text of a tool call: its input as written when it is a string, else JSON."""
    if isinstance(value, str):
        return value
    return canonical_json(value) if value is not None else ""


def parse_arguments(value: Any) -> Any:
    """Tool arguments often arrive as a JSON string; decode it when it is one."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def blocks_text(content: Any, *, text_types: Iterable[str] = ("text",)) -> str:
    """Visible text of a content value: a string, or a list of typed blocks.

    Text blocks are joined by a blank line; images and documents leave a short marker so an
    image-only prompt is still a (non-empty) message.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    kinds = set(text_types)
    pieces: list[str] = []
    for block in content:
        if isinstance(block, str):
            pieces.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            text = block.get("text")
            if kind in kinds and isinstance(text, str):
                pieces.append(text)
            elif kind in ("image", "input_image", "image_url"):
                pieces.append("[image]")
            elif kind == "document":
                pieces.append("[document]")
    return "\n\n".join(p for p in pieces if p)


_SEPARATORS = re.compile(r"[\\/]+")


#: Directory names under which tools keep git worktrees of the project above them.
_WORKTREE_DIRS = frozenset({".worktrees", ".git"})


def project_from_cwd(cwd: object) -> str | None:
    """A project name from a working directory (POSIX or Windows): its last component, except
    inside a worktree folder (``<repo>/.worktrees/<name>``, ``<repo>/.claude/worktrees/<name>``)
    where it is the repository's name, so a worktree session files under its project."""
    if not isinstance(cwd, str):
        return None
    parts = [p.strip() for p in _SEPARATORS.split(cwd.strip())]
    parts = [p for p in parts if p and not p.endswith(":")]  # drop empties and "C:"
    for i, part in enumerate(parts[1:], start=1):
        nested = part == ".claude" and i + 1 < len(parts) and parts[i + 1] == "worktrees"
        if part in _WORKTREE_DIRS or nested:
            return parts[i - 1]
    return parts[-1] if parts else None


def _unwrap(
    text: str, wrappers: dict[str, str], prefixes: tuple[str, ...], open_is_host: bool = False
) -> tuple[bool, str]:
    """``(host, rest)``: whether ``text`` is only host wrappers (see :func:`host_wrapped`), and
    what follows its leading complete wrappers."""
    rest = text.lstrip("\ufeff \t\r\n")
    while rest:
        if prefixes and rest.startswith(prefixes):
            return True, ""
        opening = next(
            (o for o in wrappers if rest.startswith(o) or rest.startswith(o.rstrip(">") + " ")),
            None,
        )
        if opening is None:
            return False, rest
        close = rest.find(wrappers[opening], len(opening.rstrip(">")))
        if close < 0:
            return open_is_host, "" if open_is_host else rest
        rest = rest[close + len(wrappers[opening]) :].lstrip()
    return bool(text.strip()), rest


def host_wrapped(
    text: str,
    wrappers: dict[str, str],
    prefixes: tuple[str, ...] = (),
    *,
    open_is_host: bool = False,
) -> bool:
    """Whether ``text`` is made only of host wrappers: ``wrappers`` maps an opening marker
    (``<environment_context>``; a tag with attributes is matched by ``<tag`` and a space) to its
    closing one, ``prefixes`` are host texts without a close (``[Request interrupted``).

    The text must start with a marker; complete wrappers are skipped one after another, and
    the user's own words after them make it the user's text (an IDE selection or a reminder
    put before a prompt). A wrapper left open is the user's, who typed the tag (hosts close what
    they open), unless ``open_is_host`` (a format whose host text may be left open)."""
    return _unwrap(text, wrappers, prefixes, open_is_host)[0]


def unwrapped_title(
    messages: Iterable[Message],
    wrappers: dict[str, str],
    prefixes: tuple[str, ...] = (),
    *,
    open_is_host: bool = False,
) -> str | None:
    """The derived title (:func:`~cwcore.importers.documents.prompt_title`) read past the host
    wrappers that open a user message (an IDE selection or a plugin list before the user's
    prompt), when they would otherwise make it; None when they do not change it (the derived
    title stands)."""
    from cwcore.importers.documents import prompt_title

    users = [(m.text, m.real_user) for m in messages if m.role == "user" and m.kind == "text"]
    bare = [
        (_unwrap(text, wrappers, prefixes, open_is_host)[1] or text, real) for text, real in users
    ]
    title = prompt_title(bare)
    return title if title != prompt_title(users) else None
