"""Results larger than one protocol frame travel as ordered parts.

A method's result is one frame on the daemon socket, and a frame is at most 16 MiB. A result that
can be larger (a long session's transcript or export, a message of tens of MiB) is sent by the
engine (:func:`send`) as ``result-part`` events carrying consecutive slices of its JSON text,
followed by the small final result ``{"resultParts": n}``; :func:`Collector` on the client side
joins the slices and decodes them, so a face sees the same dict either way. A result whose strings
total at most :data:`INLINE_CHARS` characters stays inline: the common case costs one bounded walk.

Sizes: a slice holds :data:`PART_CHARS` characters of JSON text, at most 4 UTF-8 bytes each once
re-quoted (the text has no raw control characters left to escape, and a quote or backslash becomes
two bytes), so every event frame stays far below the frame limit. Inline results are bounded the
same way: at most 6 bytes a character (``\\u001f``) times :data:`INLINE_CHARS`.
"""

from __future__ import annotations

import json
from typing import Any

from cwcore.errors import DaemonError

#: Strings (keys and values) of an inline result total at most this many characters.
INLINE_CHARS = 1024 * 1024
#: The most bytes an inline result's JSON can take (6 bytes a character at worst, ``\u001f``,
#: plus the structure): what a method that sends through :func:`send` declares as its output
#: bound, so the daemon reserves that rather than a full frame while the parts stream.
MAX_INLINE_BYTES = 6 * INLINE_CHARS + 64 * 1024
#: Characters of JSON text per ``result-part`` event.
PART_CHARS = 2 * 1024 * 1024
EVENT = "result-part"
MARKER = "resultParts"


def _over(value: Any, budget: int) -> bool:
    """True once the strings and scalars under ``value`` exceed ``budget`` characters."""
    stack = [value]
    total = 0
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            for key, child in item.items():
                total += len(key) + 4
                stack.append(child)
        elif isinstance(item, list | tuple):
            total += len(item)
            stack.extend(item)
        else:
            total += 8
        if total > budget:
            return True
    return False


def send(body: dict[str, Any], emit: Any, inline_chars: int = INLINE_CHARS) -> dict[str, Any]:
    """``body`` itself when small, else emit it in parts and return the final marker result."""
    if not _over(body, inline_chars):
        return body
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    count = 0
    for index, start in enumerate(range(0, len(text), PART_CHARS)):
        emit({"type": EVENT, "index": index, "data": text[start : start + PART_CHARS]})
        count += 1
    return {MARKER: count}


class Collector:
    """Client side: receives events, keeps ``result-part`` slices, forwards every other event."""

    def __init__(self, forward: Any = None) -> None:
        self.forward = forward
        self.parts: dict[int, str] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("type") == EVENT:
            self.parts[int(event["index"])] = str(event["data"])
        elif self.forward is not None:
            self.forward(event)

    def result(self, result: dict[str, Any]) -> dict[str, Any]:
        """The whole result: ``result`` itself unless it is the marker of a parted one."""
        if set(result) != {MARKER}:
            return result
        count = int(result[MARKER])
        if sorted(self.parts) != list(range(count)):
            # A reconnect replays only the final frame: the parts of the first try are gone.
            raise DaemonError(
                f"the result arrived in {len(self.parts)} of {count} parts; run the command again",
                retry=True,
            )
        body: dict[str, Any] = json.loads("".join(self.parts[i] for i in range(count)))
        return body
