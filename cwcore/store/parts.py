"""The optional per-message fields of a manifest part, and what a session sums from them.

A manifest part always holds ``key``, ``role``, ``kind``, its byte range and chunks; the fields
here are written only when set, so a document without them is stored exactly as before:

* ``parent`` (source id of the message it follows), ``call`` (tool call id), ``input`` (the
  tool input: ``1`` when it is the message text itself, else its canonical JSON), ``meta``
  (a user-role message the host wrote), ``error`` (a failed tool result);
* ``model`` and ``usage`` (``{"input", "output", "cacheRead", "cacheWrite"}``) on the message
  that owns a model response;
* ``subagent``: the session id of the sub-agent a tool call started.

They are part of a document's content identity (:func:`digest_fields`): a message whose usage or
link changed is a changed document. ``ts``, ``tool`` and ``lines`` predate them and stay out of
it, so documents admitted before keep their digests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cwcore.model import DocumentPart, Usage


def extra_fields(part: DocumentPart) -> dict[str, Any]:
    """The optional fields of ``part`` that are set (see the module docstring)."""
    out: dict[str, Any] = {}
    if part.parent_id:
        out["parent"] = part.parent_id
    if part.tool_call_id:
        out["call"] = part.tool_call_id
    if part.input_is_text and (part.piece is None or part.piece[0] == 0):
        out["input"] = 1
    elif part.tool_input is not None:
        out["input"] = part.tool_input
    if part.meta:
        out["meta"] = True
    if part.is_error:
        out["error"] = True
    if part.model:
        out["model"] = part.model
    if part.usage and (part.piece is None or part.piece[0] == 0):
        out["usage"] = part.usage.to_json()
    if part.subagent:
        out["subagent"] = part.subagent
    return out


def usage_total(entries: Iterable[dict[str, Any]]) -> Usage:
    """The summed usage of manifest parts (a cut message counts once, on its first piece)."""
    total = Usage()
    for entry in entries:
        usage = Usage.from_json(entry.get("usage"))
        if usage is not None:
            total = total + usage
    return total


def models_of(entries: Iterable[dict[str, Any]]) -> list[str]:
    """The models manifest parts name, in first-seen order."""
    out: list[str] = []
    for entry in entries:
        model = entry.get("model")
        if isinstance(model, str) and model and model not in out:
            out.append(model)
    return out


def message_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """A transcript message's optional fields from its manifest entry: ``parent``,
    ``toolCallId``, ``inputIsText`` (the tool input is the message text: not repeated) or
    ``toolInput`` (its JSON text), ``meta``, ``isError``, ``model``, ``usage``, ``subagent`` —
    each only when set."""
    out: dict[str, Any] = {}
    if entry.get("parent"):
        out["parent"] = entry["parent"]
    if entry.get("call"):
        out["toolCallId"] = entry["call"]
    if entry.get("input") == 1:
        out["inputIsText"] = True
    elif isinstance(entry.get("input"), str):
        out["toolInput"] = entry["input"]
    for name, key in (("meta", "meta"), ("error", "isError")):
        if entry.get(name):
            out[key] = True
    for name in ("model", "usage", "subagent"):
        if entry.get(name):
            out[name] = entry[name]
    return out
