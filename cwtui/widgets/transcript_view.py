"""A scrolling transcript that mounts its entries in batches as the user scrolls.

A long session holds thousands of messages; mounting a Markdown widget for each up front would
stall the event loop. :class:`TranscriptView` keeps a contiguous *window* of mounted entries: the
first batch on :meth:`show`, the next whenever the viewport nears the bottom (or the previous one
near the top), and on :meth:`reveal` (used by jumps) either the entries up to a nearby position
or, for a far one, a new window starting there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

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
    """Entries mounted lazily, as one contiguous window; ``expand_tools`` decides how new tool
    sections start.

    The window grows by :attr:`BATCH` entries at its bottom as the view nears it, and at its
    top as the view nears that (keeping what is on screen in place). A jump more than
    :attr:`FAR` entries outside the window starts a new window at the target instead of mounting
    everything in between, so opening a 1,000-message session at its last message costs one
    batch, not a thousand widgets. While entries above the window are not mounted, a line at the
    top says how many there are.
    """

    BATCH = 20
    #: Rows from the bottom (or top) at which the next batch is mounted.
    MARGIN = 20
    #: Entries outside the window past which a jump starts a new window.
    FAR = 60

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[Entry] = []
        self.expand_tools = False
        self._widgets: list[Widget] = []
        self._first = 0  # position of self._widgets[0]
        self._earlier: Static | None = None
        self._busy = False

    @property
    def mounted(self) -> int:
        return len(self._widgets)

    @property
    def first(self) -> int:
        """The position of the first mounted entry."""
        return self._first

    async def show(self, entries: list[Entry], start: int = 0) -> None:
        """Replace the transcript with ``entries`` and mount a batch from ``start``."""
        self.entries = entries
        await self._restart(max(0, min(start, len(entries) - 1)))
        self.scroll_home(animate=False)
        await self.reveal(min(self._first + self.BATCH, len(entries)) - 1)
        self.call_after_refresh(self._maybe_more)

    async def _restart(self, start: int) -> None:
        """Drop every mounted entry; the window starts (empty) at ``start``."""
        await self.remove_children()
        self._widgets = []
        self._first = start
        self._earlier = None
        if start > 0:
            self._earlier = Static("", classes="transcript-earlier")
            await self.mount(self._earlier)
            self._update_earlier()

    def _update_earlier(self) -> None:
        if self._earlier is None:
            return
        if self._first <= 0:
            self._earlier.remove()
            self._earlier = None
            return
        noun = "entry" if self._first == 1 else "entries"
        self._earlier.update(
            Text(f"⋯ {self._first} earlier {noun} — scroll up to load them", style="dim italic")
        )

    def _make(self, position: int) -> Widget:
        entry = self.entries[position]
        if entry.kind == "event":
            return EventView(entry.data, position=position)
        return MessageView(
            entry.data, position=position, number=entry.number, expand_tools=self.expand_tools
        )

    async def reveal(self, position: int) -> Widget | None:
        """Mount what it takes for ``position`` to be in the window and return its widget
        (None if out of range): the entries between the window and it, or — when it is more
        than :attr:`FAR` entries away — a new window starting at it."""
        if position >= len(self.entries):
            position = len(self.entries) - 1
        if position < 0:
            return None
        end = self._first + self.mounted  # one past the window
        if position < self._first:
            if self._first - position > self.FAR:
                await self._restart(position)
            else:
                await self._prepend(position)
        elif position >= end and position - end >= self.FAR:
            await self._restart(position)
        end = self._first + self.mounted
        if position >= end:
            batch = [self._make(p) for p in range(end, position + 1)]
            self._widgets.extend(batch)
            await self.mount_all(batch)
        return self._widgets[position - self._first]

    async def _prepend(self, position: int) -> None:
        """Mount the entries from ``position`` up to the window's start above it."""
        if position >= self._first:
            return
        batch = [self._make(p) for p in range(position, self._first)]
        if self._widgets:
            await self.mount_all(batch, before=self._widgets[0])
        else:
            await self.mount_all(batch)
        self._widgets[:0] = batch
        self._first = position
        self._update_earlier()

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
        """Mount the next batch when the bottom is near (or the view is not yet full), or the
        previous one when the top is near and entries above are not mounted."""
        if self._busy:
            return
        if self._first + self.mounted < len(self.entries) and (
            self.scroll_y >= self.max_scroll_y - self.MARGIN
        ):
            self._busy = True
            self.run_worker(self._more(), group="transcript-more")
        elif self._first > 0 and self.scroll_y <= self.MARGIN:
            self._busy = True
            self.run_worker(self._less(), group="transcript-more")

    async def _more(self) -> None:
        try:
            await self.reveal(self._first + self.mounted + self.BATCH - 1)
        finally:
            self._busy = False
        self.call_after_refresh(self._maybe_more)

    async def _less(self) -> None:
        """Mount the batch above the window, keeping the entry on screen where it is."""
        anchor = self._widgets[0] if self._widgets else None
        offset = anchor.virtual_region.y - self.scroll_y if anchor is not None else 0
        try:
            await self._prepend(max(0, self._first - self.BATCH))
        except Exception:
            self._busy = False
            raise

        def settle() -> None:
            if anchor is not None and anchor.is_attached:
                self.scroll_to(y=anchor.virtual_region.y - offset, animate=False)
            self._busy = False

        self.call_after_refresh(settle)
