"""A scrolling transcript that mounts its entries in batches as the user scrolls.

A long session holds thousands of messages; mounting a Markdown widget for each up front would
stall the event loop. :class:`TranscriptView` keeps a contiguous *window* of mounted entries: the
first batch on :meth:`show`, the next whenever the viewport nears the bottom (or the previous one
near the top), and on :meth:`reveal` (used by jumps) either the entries up to a nearby position
or, for a far one, a new window starting there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from cwcore.contract.views import MetadataEvent, Transcript, TranscriptMessage
from cwtui.widgets.message import EventView, MessageView


@dataclass(frozen=True)
class Entry:
    """One row of the transcript: a message (with its 1-based number) or a metadata event.
    ``pair`` is the number of the tool call a result answers, or of the result a call got."""

    kind: str  # "message" | "event"
    data: TranscriptMessage | MetadataEvent
    number: int = 0
    pair: int | None = None

    @property
    def message(self) -> TranscriptMessage | None:
        """The message of a message row (None for an event)."""
        return self.data if isinstance(self.data, TranscriptMessage) else None


def tool_pairs(messages: Sequence[TranscriptMessage]) -> dict[int, int]:
    """Tool calls and their results, by 1-based message number both ways.

    A result answers the oldest unanswered call of its tool before it (parallel calls are
    answered in the order they were made), else the oldest unanswered call; a real user prompt
    closes every call still open, so nothing pairs across turns."""
    pairs: dict[int, int] = {}
    open_calls: list[tuple[int, str | None]] = []
    for number, message in enumerate(messages, start=1):
        kind = message.kind
        if kind == "tool-call":
            open_calls.append((number, message.tool))
        elif kind == "tool-result" and open_calls:
            tool = message.tool
            pick = next((c for c in open_calls if tool and c[1] == tool), open_calls[0])
            open_calls.remove(pick)
            pairs[pick[0]], pairs[number] = number, pick[0]
        elif message.role == "user" and kind == "text":
            open_calls.clear()
    return pairs


def build_entries(body: Transcript) -> list[Entry]:
    """Messages in order, with metadata events (when present) placed by source line."""
    messages = body.messages
    pairs = tool_pairs(messages)
    items: list[tuple[int, int, Entry]] = []
    for index, message in enumerate(messages):
        line = message.lines[0] if message.lines else 0
        entry = Entry("message", message, index + 1, pairs.get(index + 1))
        items.append((line, index, entry))
    events = body.events or ()
    for event in events:
        items.append((event.line, -1, Entry("event", event)))
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

    Every change of the window runs under one lock (a batch mounting in a worker never meets a
    jump that restarts the window), and a jump's :meth:`land` holds batches off until its target
    is on screen, then keeps it in place while batches mount above it.
    """

    class Edge(Message):
        """Home or End: the screen goes to the first or last entry (not just the last one
        mounted)."""

        def __init__(self, last: bool) -> None:
            super().__init__()
            self.last = last

    DEFAULT_CSS = """
    TranscriptView.-landing { opacity: 0; }
    """

    BATCH = 20
    #: Rows from the bottom (or top) at which the next batch is mounted.
    MARGIN = 20
    #: Entries outside the window past which a jump starts a new window.
    FAR = 60
    #: Refreshes a scroll waits for layout to catch up with what was just mounted.
    SETTLE_TRIES = 12

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[Entry] = []
        self.expand_tools = False
        self.find_term = ""
        self._widgets: list[Widget] = []
        self._first = 0  # position of self._widgets[0]
        self._earlier: Static | None = None
        self._lock = asyncio.Lock()
        self._mounting = False  # a batch worker is scheduled or running
        self._holding = False  # a jump waits to land: no batch until it has
        #: What a jump asked to see and at which row of it: kept on screen while batches mount.
        self._anchor: tuple[Widget, int] | None = None
        #: The scroll offset the last landing put the view at.
        self._landed_y: float | None = None
        #: Set when the screen is being left: nothing more is mounted or restyled.
        self.leaving = False

    @property
    def mounted(self) -> int:
        return len(self._widgets)

    @property
    def first(self) -> int:
        """The position of the first mounted entry."""
        return self._first

    @property
    def held(self) -> Widget | None:
        """The entry a jump landed on, while it is held in place."""
        return self._anchor[0] if self._anchor else None

    async def show(self, entries: list[Entry], start: int = 0, *, settle: bool = True) -> None:
        """Replace the transcript with ``entries`` and mount a batch from ``start``. With
        ``settle`` False the caller lands on an entry next (:meth:`land`), so nothing more is
        mounted until then."""
        self._anchor = None
        self._holding = not settle
        # Landing next: nothing is painted until the target is at the top, so the first frame
        # shows the target (not the window's first entries, then the target).
        self.set_class(not settle, "-landing")
        async with self._lock:
            self.entries = entries
            await self._restart(max(0, min(start, len(entries) - 1)))
            self.scroll_home(animate=False)
            await self._reveal(min(self._first + self.BATCH, len(entries)) - 1)
        if settle:
            self.call_after_refresh(self._maybe_more)

    def land(self, widget: Widget, row: int = 0) -> None:
        """Scroll so that ``widget``'s row ``row`` is at the top of the view, once layout has
        placed it, and keep it there while batches mount around it (until the user scrolls).
        Batches are held off until then, so one above can never push the target away."""
        self._anchor = (widget, row)
        self._holding = True
        self.call_after_refresh(self._land, 0)

    def _land(self, tries: int) -> None:
        if self._anchor is None or not self._anchor[0].is_attached:
            self._holding = False
            self.set_class(False, "-landing")
            return
        widget, row = self._anchor
        y = widget.virtual_region.y + row
        laid_out = widget.virtual_region.height > 0 and y <= self.max_scroll_y
        if not laid_out and tries < self.SETTLE_TRIES:
            self.call_after_refresh(self._land, tries + 1)
            return
        self.scroll_to(y=y, animate=False, immediate=True)
        self._landed_y = y
        self._holding = False
        self.set_class(False, "-landing")
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
        if isinstance(entry.data, MetadataEvent):
            return EventView(entry.data, position=position)
        return MessageView(
            entry.data,
            position=position,
            number=entry.number,
            expand_tools=self.expand_tools,
            pair=entry.pair,
            find_term=self.find_term,
        )

    def widget_at(self, position: int) -> Widget | None:
        """The mounted widget of entry ``position`` (None when it is outside the window)."""
        if self._first <= position < self._first + self.mounted:
            return self._widgets[position - self._first]
        return None

    def set_find_term(self, term: str) -> None:
        """Highlight ``term`` in every message, now and in batches still to come."""
        self.find_term = term
        for view in self.query(MessageView):
            view.find_term = term

    def first_in_view(self) -> Widget | None:
        """The first mounted entry whose bottom is below the top of the view."""
        top = self.scroll_y
        return next((w for w in self._widgets if w.virtual_region.bottom > top), None)

    async def reveal(self, position: int) -> Widget | None:
        """Mount what it takes for ``position`` to be in the window and return its widget
        (None if out of range): the entries between the window and it, or — when it is more
        than :attr:`FAR` entries away — a new window starting at it."""
        async with self._lock:
            return await self._reveal(position)

    async def _reveal(self, position: int) -> Widget | None:
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
        async with self._lock:
            if 0 <= position < len(self.entries) and self._far(position):
                # The new window starts a batch above the target: it lays out with the target,
                # so the one scroll that lands on it is final (see :meth:`_maybe_more`).
                await self._restart(max(0, position - self.BATCH))
            widget = await self._reveal(position)
            if widget is not None:
                await self._reveal(position + self.BATCH)
            return widget

    def _far(self, position: int) -> bool:
        """Whether ``position`` is more than :attr:`FAR` entries outside the window."""
        end = self._first + self.mounted
        if position < self._first:
            return self._first - position > self.FAR
        return position >= end and position - end >= self.FAR

    def set_tools_expanded(self, expanded: bool) -> None:
        """Expand or collapse every tool message, now and in batches still to come."""
        self.expand_tools = expanded
        for view in self.query(MessageView):
            if view.foldable:
                view.expanded = expanded

    def watch_has_focus(self, has_focus: bool) -> None:
        # Textual restyles the view and every mounted message when its focus changes (a rule
        # could select them by the view's focus; app.tcss has none). Leaving, that is work for
        # widgets about to go: tens of milliseconds per batch of messages, after Esc.
        if not self.leaving:
            super().watch_has_focus(has_focus)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._maybe_more()

    # The user scrolls (keys or wheel): stop holding the jump's target in place.
    def action_scroll_down(self) -> None:
        self._anchor = None
        super().action_scroll_down()

    def action_scroll_up(self) -> None:
        self._anchor = None
        super().action_scroll_up()

    def action_page_down(self) -> None:
        self._anchor = None
        super().action_page_down()

    def action_page_up(self) -> None:
        self._anchor = None
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._anchor = None
        self.post_message(self.Edge(False))

    def action_scroll_end(self) -> None:
        self._anchor = None
        self.post_message(self.Edge(True))

    def _on_mouse_scroll_down(self, event: Any) -> None:
        self._anchor = None
        super()._on_mouse_scroll_down(event)

    def _on_mouse_scroll_up(self, event: Any) -> None:
        self._anchor = None
        super()._on_mouse_scroll_up(event)

    def _maybe_more(self) -> None:
        """Mount the next batch when the bottom is near (or the view is not yet full), or the
        previous one when the top is near and entries above are not mounted."""
        if self._mounting or self._holding or self.leaving:
            return
        if self._first + self.mounted < len(self.entries) and (
            self.scroll_y >= self.max_scroll_y - self.MARGIN
        ):
            self._mounting = True
            self.run_worker(self._more(), group="transcript-more")
        elif self._first > 0 and self.scroll_y <= self.MARGIN and not self._resting():
            # Not while a jump's target rests where it landed: the batch above lays out a
            # frame after it is mounted, so that frame would show the target pushed a batch
            # down before the scroll puts it back (the landing seen to jump ~20 messages away
            # and back). The entries above mount once the view moves.
            self._mounting = True
            self.run_worker(self._less(), group="transcript-more")

    def _resting(self) -> bool:
        """Whether a jump's target is held and the view has not moved since it landed."""
        return self._anchor is not None and self.scroll_y == self._landed_y

    async def _more(self) -> None:
        try:
            async with self._lock:
                await self._reveal(self._first + self.mounted + self.BATCH - 1)
        finally:
            self._mounting = False
        self.call_after_refresh(self._maybe_more)

    async def _less(self) -> None:
        """Mount the batch above the window, keeping the entry on screen where it is (the
        jump's target when one is held, else the first mounted entry)."""
        try:
            async with self._lock:
                held = self._anchor[0] if self._anchor and self._anchor[0].is_attached else None
                anchor = held or (self._widgets[0] if self._widgets else None)
                if anchor is None or self._first <= 0:
                    self._mounting = False
                    return
                before = anchor.virtual_region.y
                offset = before - self.scroll_y
                count = self._first - max(0, self._first - self.BATCH)
                await self._prepend(max(0, self._first - self.BATCH))
        except Exception:
            self._mounting = False
            raise

        def settle(tries: int) -> None:
            if not anchor.is_attached:
                self._mounting = False
                return
            # Layout places the new batch on a later refresh: until the anchor has moved down
            # by at least a row per entry mounted above it, its position is the old one.
            y = anchor.virtual_region.y
            stale = y < before + count or y - offset > self.max_scroll_y
            if stale and tries < self.SETTLE_TRIES:
                self.call_after_refresh(settle, tries + 1)
                return
            self.scroll_to(y=y - offset, animate=False, immediate=True)
            self._mounting = False
            self.call_after_refresh(self._maybe_more)

        self.call_after_refresh(settle, 0)
