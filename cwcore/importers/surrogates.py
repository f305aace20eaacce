"""Text that is not valid Unicode: one rule for every field an importer reads.

JSON may spell a lone UTF-16 surrogate (``"passed \\ud83d"``: a tool output cut inside an emoji),
which Python decodes into a ``str`` that no UTF-8 encoder accepts. The rule:

- the source line is kept byte-exact as its event (the escape is plain ASCII there), so nothing
  of the evidence is lost;
- every string cw derives from it — message text, tool names, call ids, tool inputs, models,
  times, titles, agent, project, folder, lineage, metadata, a line's record type — has each
  lone surrogate replaced by U+FFFD
  before documents are built, and the import counts the replacements in a notice.

Ids are no exception: a session or message id is replaced the same way (the same file gives
the same id at every import, and a child's parent id is replaced as its parent's was), so no
message is dropped for its id.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from cwcore.model import Message, ParsedSession

__all__ = ["REPLACEMENT", "replace_lone_surrogates"]

REPLACEMENT = "\ufffd"
_LONE = re.compile("[\ud800-\udfff]")
_MESSAGE_FIELDS = (
    "message_id",
    "text",
    "tool_name",
    "tool_call_id",
    "tool_input",
    "model",
    "subagent",
    "timestamp",
)
_SESSION_FIELDS = (
    "session_id",
    "agent",
    "started",
    "title",
    "project",
    "cwd",
    "parent_session",
    "resume_command",
    "parent_tool_call",
)


def replace_lone_surrogates(parsed: ParsedSession) -> tuple[ParsedSession, int]:
    """``parsed`` with every lone surrogate of its derived strings replaced by U+FFFD, and how
    many were replaced (0: ``parsed`` itself is returned)."""
    count = 0

    def fix(value: str) -> str:
        nonlocal count
        fixed, n = _LONE.subn(REPLACEMENT, value)
        count += n
        return fixed

    messages = []
    for message in parsed.messages:
        changes: dict[str, Any] = {
            name: fix(value)
            for name in _MESSAGE_FIELDS
            if isinstance(value := getattr(message, name), str) and _LONE.search(value)
        }
        if message.parent_id is not None and _LONE.search(message.parent_id):
            changes["parent_id"] = fix(message.parent_id)
        messages.append(_replace(message, changes))
    session: dict[str, Any] = {
        name: fix(value)
        for name in _SESSION_FIELDS
        if isinstance(value := getattr(parsed, name), str) and _LONE.search(value)
    }
    lineage = tuple(fix(s) if _LONE.search(s) else s for s in parsed.lineage)
    events = tuple(
        dataclasses.replace(e, type=fix(e.type)) if _LONE.search(e.type) else e
        for e in parsed.events
    )
    metadata = _fix_json(parsed.metadata, fix)
    source = parsed.source_path
    if source is not None and _LONE.search(source):
        # A file name that is not UTF-8 (``os.fsdecode`` keeps its bytes as surrogates): shown
        # replaced, and not counted as the file's text.
        session["source_path"] = _LONE.sub(REPLACEMENT, source)
    if not count and not session:
        return parsed, 0
    return dataclasses.replace(
        parsed,
        messages=tuple(messages),
        events=events,
        lineage=lineage,
        metadata=metadata,
        **session,
    ), count


def _replace(message: Message, changes: dict[str, Any]) -> Message:
    return dataclasses.replace(message, **changes) if changes else message


def _fix_json(value: Any, fix: Any) -> Any:
    """A JSON-like value with its strings (keys included) fixed; containers rebuilt only when
    something in them changed."""
    if isinstance(value, str):
        return fix(value) if _LONE.search(value) else value
    if isinstance(value, dict):
        out = {_fix_json(k, fix): _fix_json(v, fix) for k, v in value.items()}
        return out if out != value else value
    if isinstance(value, (list, tuple)):
        items = [_fix_json(v, fix) for v in value]
        return type(value)(items) if items != list(value) else value
    return value
