"""Filter pickers (issue 34): choose an agent or a project from the archive's known values,
each shown with how many sessions and messages pass the other active filters, and the time
preset cycle (any → 24h → 7d → 30d → any) the search and sessions screens share.

:class:`FilterPicker` is a modal list that loads its choices itself
(:meth:`~cwcore.api.Archive.facets` in a thread worker), so it opens at once on its key: until
the counts arrive it lists "any" and the current choice, so an Enter typed with the key in one
burst (dropped anyway: :meth:`LiveScreen.typed_blind`) or right after it changes nothing. It
dismisses with the chosen name, ``""`` for "any", or ``None`` when closed with Esc.

:func:`set_token` puts a ``key:value`` filter into the search screen's standing-filter text (the
inline syntax of :mod:`cwcore.retrieve.filters`), so a picked value is an ordinary typed filter:
the F5 dialog shows it, the history keeps it, and an inline filter in the query still wins.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from cwcore.contract.facets import FacetCount, Facets
from cwcore.errors import CwError
from cwcore.retrieve.filters import parse_time_filter
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.widgets.dialog import Dialog
from cwtui.widgets.nav import NavList

#: The time presets in cycle order (None: any time), as spans back from now.
TIME_PRESETS: tuple[str | None, ...] = (None, "24h", "7d", "30d")


def next_time(current: str | None) -> str | None:
    """The preset after ``current``; a value that is no preset (a typed date) counts as "any",
    so the cycle starts again at 24h."""
    preset = current.strip().lower() if current else None
    at = TIME_PRESETS.index(preset) if preset in TIME_PRESETS else 0
    return TIME_PRESETS[(at + 1) % len(TIME_PRESETS)]


def preset_since(preset: str | None, now: datetime) -> str | None:
    """The ISO instant a preset reaches back to from ``now`` (None for any time)."""
    return parse_time_filter(preset, now) if preset else None


def _token_re(key: str) -> re.Pattern[str]:
    # As cwcore.retrieve.filters reads tokens: a key at the start of a word (an escaped
    # ``\\key:`` is text, and its backslash keeps it from matching), a quoted or bare value.
    return re.compile(r"(?<!\S)" + re.escape(key) + r':(?:"[^"]*"?|\S*)', re.IGNORECASE)


def token_value(text: str, key: str) -> str | None:
    """The value of the last ``key:`` filter in ``text`` (None when there is none)."""
    found = _token_re(key).findall(text)
    if not found:
        return None
    value = found[-1].split(":", 1)[1]
    return value[1:].rstrip('"') if value.startswith('"') else value


def set_token(text: str, key: str, value: str | None) -> str:
    """``text`` with every ``key:`` filter taken out and, unless ``value`` is None or empty,
    ``key:value`` added at the end (quoted when it holds white space); white space collapsed."""
    kept = _token_re(key).sub(" ", text)
    if value:
        quoted = any(c.isspace() for c in value) or value.startswith('"') or not value
        kept += f' {key}:"{value}"' if quoted else f" {key}:{value}"
    return " ".join(kept.split())


def count_label(item: FacetCount) -> str:
    sessions = "session" if item.sessions == 1 else "sessions"
    messages = "msg" if item.messages == 1 else "msgs"
    return f"{item.sessions:,} {sessions} · {item.messages:,} {messages}"


class FilterPicker(ModalScreen[str | None], LiveScreen):
    """Pick one agent or project; ``filters`` are the other active filters the counts honour
    (``project``, ``agent``, ``since``, ``until`` as :meth:`Archive.facets` takes them)."""

    DEFAULT_CSS = """
    FilterPicker {
        align: center middle;
    }
    FilterPicker #filter-options {
        height: auto;
        max-height: 16;
        border: none;
    }
    FilterPicker #filter-note {
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cw.picker.cancel", tooltip="Close"),
    ]

    ANY_ID = "any"

    class Loaded(CallDone):
        def __init__(self, facets: Facets) -> None:
            super().__init__()
            self.facets = facets

    class Failed(CallDone):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, kind: str, current: str | None, filters: dict[str, Any]) -> None:
        super().__init__()
        if kind not in ("agent", "project"):
            raise ValueError(f"no picker for {kind!r}")
        self.kind, self.current, self.filters = kind, current, dict(filters)
        self._names: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        with Dialog(id="filter-dialog", classes="dialog"):
            yield Label(f"Filter by {self.kind}", classes="dialog-title")
            yield Label(self._note(), id="filter-note")
            yield NavList(id="filter-options")

    def _note(self) -> str:
        other = [f"{k} {v}" for k, v in self.filters.items() if v]
        within = f"within {', '.join(other)}" if other else "in the whole archive"
        return f"Counts {within}. Enter picks, Esc closes."

    def on_mount(self) -> None:
        # Until the counts arrive: "any" and the current choice, highlighted.
        self._show(None)
        self.query_one(NavList).focus()
        self._load(archive_handle(self.app))

    @work(thread=True, exclusive=True, group="filter-picker", exit_on_error=False)
    def _load(self, handle: ArchiveHandle) -> None:
        try:
            with handle.use() as archive:
                if get_current_worker().is_cancelled:
                    return
                found = archive.facets(**self.filters)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        self.post_message(self.Loaded(found))

    def on_filter_picker_loaded(self, message: Loaded) -> None:
        self._show(message.facets)

    def on_filter_picker_failed(self, message: Failed) -> None:
        self.query_one("#filter-note", Label).update(Text(message.text, "bold red"))

    def _show(self, facets: Facets | None) -> None:
        listing = self.query_one(NavList)
        # Keep the row the user moved to while the counts were on their way.
        option = listing.highlighted_option if listing.option_count else None
        wanted = self._names.get(option.id or "", self.current) if option else self.current
        if option is not None and option.id == self.ANY_ID:
            wanted = None
        items: tuple[FacetCount, ...] = ()
        if facets is not None:
            items = facets.agents if self.kind == "agent" else facets.projects
        elif self.current:
            items = (FacetCount(self.current, 0, 0),)
        total = sum(item.sessions for item in items)
        messages = sum(item.messages for item in items)
        rows = [
            Option(
                self._row(f"any {self.kind}", FacetCount("", total, messages), facets, bold=True),
                self.ANY_ID,
            )
        ]
        self._names = {f"v{n}": item.name for n, item in enumerate(items)}
        rows += [
            Option(self._row(item.name, item, facets), option_id)
            for option_id, item in zip(self._names, items, strict=True)
        ]
        listing.set_options(rows)
        target = next((k for k, v in self._names.items() if v == wanted), self.ANY_ID)
        listing.highlighted = listing.get_option_index(target)

    @staticmethod
    def _row(name: str, item: FacetCount, facets: Facets | None, *, bold: bool = False) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(name, "bold" if bold else "")
        if facets is None:
            text.append("  counting…", "dim")
        else:
            text.append(f"  {count_label(item)}", "dim" if item.sessions else "dim italic")
        return text

    @on(OptionList.OptionSelected, "#filter-options")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        self.dismiss("" if option_id == self.ANY_ID else self._names.get(option_id, ""))

    def action_cancel(self) -> None:
        self.dismiss(None)
