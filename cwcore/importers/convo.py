"""A linear conversation builder the newer importers share (formats without a message tree).

:class:`Conversation` applies the definitions every importer follows, so a format module only
maps its records: a user prompt is a real user message unless the format marks it host-made; an
assistant message exists only when it has visible text; each tool call is a message whose text is
its input (:func:`~cwcore.importers.common.tool_call_text`) and whose result takes the call's tool
name; thinking is a ``thinking`` message placed before the output it led to; a model response's
``model`` and ``usage`` go on the message that owns the response (its text, else its first tool
call), so each response counts once. Messages carry no ``parent_id``: these formats record no
tree, and turn grouping follows file order. Duplicate ids are refused as problems (:class:`Sink`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cwcore.importers.common import Sink, canonical_json, tool_call_text
from cwcore.model import Message, SourceEvent, Usage


def count(value: object) -> int:
    """A non-negative token count, or 0 for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def obj(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


class Conversation:
    """The messages of one session, in source order (see the module doc)."""

    def __init__(self) -> None:
        self.sink = Sink()
        self.tools: dict[str, str] = {}  # tool call id -> tool name
        self._owner: int | None = None  # index of the current response's owner message
        self._open = False  # a response has begun and has no owner yet
        self._pending: tuple[str | None, Usage | None] = (None, None)

    @property
    def messages(self) -> list[Message]:
        return self.sink.messages

    def add(
        self,
        message_id: str,
        role: str,
        kind: str,
        text: object,
        *,
        line: int | tuple[int, ...],
        ts: str | None,
        always: bool = False,
        **extra: Any,
    ) -> bool:
        """Add one message; an empty text adds nothing unless ``always``."""
        if not isinstance(text, str) or (not always and not text.strip()):
            return False
        lines = line if isinstance(line, tuple) else (line,)
        return self.sink.add(
            Message(
                message_id=message_id,
                role=role,  # type: ignore[arg-type]
                kind=kind,  # type: ignore[arg-type]
                text=text,
                lines=lines,
                timestamp=ts,
                **extra,
            )
        )

    def user(
        self,
        message_id: str,
        text: object,
        *,
        line: int | tuple[int, ...],
        ts: str | None,
        real: bool = True,
    ) -> bool:
        self._open = False
        return self.add(message_id, "user", "text", text, line=line, ts=ts, real_user=real)

    def system(
        self,
        message_id: str,
        text: object,
        *,
        line: int | tuple[int, ...],
        ts: str | None,
        kind: str = "text",
    ) -> bool:
        return self.add(message_id, "system", kind, text, line=line, ts=ts)

    def begin_response(self, model: str | None = None, usage: Usage | None = None) -> None:
        """The next assistant text or tool call starts a new model response, which gets
        ``model`` and ``usage`` (more can be attached later with :meth:`attach`)."""
        self._open = True
        self._owner = None
        self._pending = (model or None, usage or None)

    def thinking(
        self, message_id: str, text: object, *, line: int | tuple[int, ...], ts: str | None
    ) -> bool:
        return self.add(message_id, "assistant", "thinking", text, line=line, ts=ts)

    def assistant(
        self,
        message_id: str,
        text: object,
        *,
        line: int | tuple[int, ...],
        ts: str | None,
        **response: Any,
    ) -> bool:
        """Assistant text; ``response`` (``model``, ``usage``), when given, names this message
        the owner of its response instead of :meth:`begin_response`'s rule."""
        return self._respond(message_id, "text", text, line=line, ts=ts, **response)

    def call(
        self,
        call_id: str,
        name: str | None,
        arguments: Any,
        *,
        line: int | tuple[int, ...],
        ts: str | None,
        **response: Any,
    ) -> bool:
        """A tool call; ``arguments`` is the input as the source gave it (decoded JSON);
        ``response`` as for :meth:`assistant`."""
        if name:
            self.tools[call_id] = name
        return self._respond(
            call_id,
            "tool-call",
            tool_call_text(arguments),
            line=line,
            ts=ts,
            always=True,
            **response,
            tool_name=name or None,
            tool_call_id=call_id,
            tool_input=None if arguments is None else canonical_json(arguments),
        )

    def result(
        self,
        message_id: str,
        call_id: str | None,
        text: object,
        *,
        line: int | tuple[int, ...],
        ts: str | None,
        is_error: bool = False,
        name: str | None = None,
    ) -> bool:
        return self.add(
            message_id,
            "tool",
            "tool-result",
            text if isinstance(text, str) else "",
            line=line,
            ts=ts,
            always=True,
            tool_call_id=call_id,
            tool_name=name or (self.tools.get(call_id) if call_id else None),
            is_error=is_error,
        )

    def attach(self, model: str | None = None, usage: Usage | None = None) -> None:
        """Give the current response's owner a model and (added) usage reported after it."""
        if self._owner is None:
            if model or usage:  # no owner yet: the next one takes it
                old_model, old_usage = self._pending
                summed = (old_usage + usage) if old_usage and usage else (old_usage or usage)
                self._pending = (old_model or model or None, summed or None)
                self._open = True
            return
        message = self.sink.messages[self._owner]
        summed = (message.usage + usage) if message.usage and usage else (message.usage or usage)
        self.sink.messages[self._owner] = dataclasses.replace(
            message, model=message.model or model or None, usage=summed or None
        )

    def _respond(self, message_id: str, kind: str, text: object, **kw: Any) -> bool:
        if "model" in kw or "usage" in kw:  # the caller chose the owner itself
            kw = {k: v for k, v in kw.items() if v is not None}
            return self.add(message_id, "assistant", kind, text, **kw)
        owner = self._open or self._owner is None
        model, usage = self._pending if owner else (None, None)
        if model:
            kw["model"] = model
        if usage:
            kw["usage"] = usage
        added = self.add(message_id, "assistant", kind, text, **kw)
        if added and owner:
            self._owner = len(self.sink.messages) - 1
            self._open = False
            self._pending = (None, None)
        return added

    def events(self, records: list[tuple[int, bytes, str]]) -> tuple[SourceEvent, ...]:
        """``(line, raw, type)`` records as events; conversational when a message used them."""
        used = {n for m in self.sink.messages for n in m.lines}
        return tuple(SourceEvent(n, raw, n in used, kind) for n, raw, kind in records)

    def started(self) -> str | None:
        stamps = [m.timestamp for m in self.sink.messages if m.timestamp]
        return min(stamps) if stamps else None
