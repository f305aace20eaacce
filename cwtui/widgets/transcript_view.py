"""A scrolling transcript that mounts its entries in batches as the user scrolls.

A long session holds thousands of messages; mounting a Markdown widget for each up front would
stall the event loop. :class:`TranscriptView` mounts :attr:`BATCH` entries at a time: the first
batch on :meth:`show`, the next whenever the viewport nears the bottom, and everything up to a
position on :meth:`reveal` (used by jumps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.containers import VerticalScroll
from textual.widget import Widget

from cwtui.widgets.message import EventView, MessageView


@dataclass(frozen=True)
class Entry:
    """One row of the transcript: a message (with its 1-based number) or a metadata event."""

    kind: str  # "message" | "event"
    data: dict[str, Any]
    number: int = 0


def build_entries(body: dict[str, Any]) -> list[Entry]:
    """Messages in order, with metadata events (when present) placed by source line."""
    items: list[tuple[int, int, Entry]] = []
    for index, message in enumerate(body.get("messages", [])):
        line = message["lines"][0] if message.get("lines") else 0
        items.append((line, index, Entry("message", message, index + 1)))
    events = body.get("events") or []
    for event in events:
        items.append((int(event.get("line") or 0), -1, Entry("event", event)))
    if events:  # messages keep their own order when there is nothing to interleave
        items.sort(key=lambda item: (item[0], item[1]))
    return [entry for _, _, entry in items]


class TranscriptView(VerticalScroll):
    """Entries mounted lazily; ``expand_tools`` decides how new tool sections start."""

    BATCH = 20
    #: Rows from the bottom at which the next batch is mounted.
    MARGIN = 20

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[Entry] = []
        self.expand_tools = False
        self._widgets: list[Widget] = []
        self._busy = False

    @property
    def mounted(self) -> int:
        return len(self._widgets)

    async def show(self, entries: list[Entry]) -> None:
        """Replace the transcript with ``entries`` and mount the first batch."""
        await self.remove_children()
        self._widgets = []
        self.entries = entries
        self.scroll_home(animate=False)
        await self.reveal(min(self.BATCH, len(entries)) - 1)
        self.call_after_refresh(self._maybe_more)

    def _make(self, position: int) -> Widget:
        entry = self.entries[position]
        if entry.kind == "event":
            return EventView(entry.data, position=position)
        return MessageView(
            entry.data, position=position, number=entry.number, expand_tools=self.expand_tools
        )

    async def reveal(self, position: int) -> Widget | None:
        """Mount every entry up to ``position`` and return its widget (None if out of range)."""
        if position >= len(self.entries):
            position = len(self.entries) - 1
        if position < 0:
            return None
        if position >= self.mounted:
            batch = [self._make(p) for p in range(self.mounted, position + 1)]
            self._widgets.extend(batch)
            await self.mount_all(batch)
        return self._widgets[position]

    async def reveal_for_top(self, position: int) -> Widget | None:
        """Like :meth:`reveal`, plus a batch after ``position`` so it can scroll to the top."""
        widget = await self.reveal(position)
        if widget is not None:
            await self.reveal(position + self.BATCH)
        return widget

    def set_tools_expanded(self, expanded: bool) -> None:
        """Expand or collapse every tool message, now and in batches still to come."""
        self.expand_tools = expanded
        for view in self.query(MessageView):
            if view.foldable:
                view.expanded = expanded

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._maybe_more()

    def _maybe_more(self) -> None:
        """Mount the next batch when the bottom is near (or when the view is not yet full)."""
        if self._busy or self.mounted >= len(self.entries):
            return
        if self.scroll_y >= self.max_scroll_y - self.MARGIN:
            self._busy = True
            self.run_worker(self._more(), group="transcript-more")

    async def _more(self) -> None:
        try:
            await self.reveal(self.mounted + self.BATCH - 1)
        finally:
            self._busy = False
        self.call_after_refresh(self._maybe_more)
