"""The projects list: each project with its session count and a sessions-per-day sparkline.

The sessions screen builds an immutable :class:`Overview` from the archive's facets (each
project's sessions and sessions per day, :func:`cwcore.facets.facets`); :class:`ProjectList`
shows one and posts :class:`ProjectList.Chosen` when the user picks a project (``None`` = all
projects).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cwtui.widgets.nav import NavList
from cwtui.widgets.sparkline import sparkline

#: Days of activity each sparkline covers, ending today (``CW_NOW`` in tests).
SPARK_DAYS = 28
#: Cells a project row may use; the projects pane is sized to fit it (see app.tcss).
ROW_WIDTH = SPARK_DAYS + 2


@dataclass(frozen=True)
class ProjectSummary:
    """One project: its ``sessions`` and sessions per day, oldest day first."""

    name: str
    sessions: int
    activity: tuple[int, ...]


@dataclass(frozen=True)
class Overview:
    """The projects list: every project (by name) and agent, the sessions in all and per day."""

    total: int
    activity: tuple[int, ...]
    projects: tuple[ProjectSummary, ...]
    agents: tuple[str, ...]


def _row(name: str, count: int, activity: tuple[int, ...], *, bold: bool = False) -> Text:
    """Two lines: the name with its count right-aligned, then the sparkline."""
    label = str(count)
    room = ROW_WIDTH - cell_len(label) - 1
    if cell_len(name) > room:
        name = name[: max(1, room - 1)] + "…"
    gap = " " * max(1, ROW_WIDTH - cell_len(name) - cell_len(label))
    text = Text.assemble(
        (name, "bold" if bold else ""), gap, (label, "dim"), "\n", (sparkline(activity), "green")
    )
    text.no_wrap = True
    return text


class ProjectList(NavList):
    """Pick a project to filter the sessions table; the first entry means "all projects"."""

    ALL_ID = "all"

    class Chosen(Message):
        """The user picked ``project`` (``None``: all projects)."""

        def __init__(self, project: str | None) -> None:
            super().__init__()
            self.project = project

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._names: dict[str, str] = {}

    def show(self, overview: Overview, selected: str | None) -> None:
        """Replace the entries with ``overview``'s and highlight ``selected`` — or, while the user
        is moving through the list, the project they are on (updates arrive during the walk)."""
        if self.has_focus and self.highlighted_option is not None:
            option_id = self.highlighted_option.id
            selected = None if option_id == self.ALL_ID else self._names.get(option_id or "")
        self._names = {f"p{index}": p.name for index, p in enumerate(overview.projects)}
        everything = _row("All projects", overview.total, overview.activity, bold=True)
        options = [Option(everything, self.ALL_ID)]
        options += [
            Option(_row(p.name, p.sessions, p.activity), option_id)
            for option_id, p in zip(self._names, overview.projects, strict=True)
        ]
        self.set_options(options)
        target = next((k for k, v in self._names.items() if v == selected), self.ALL_ID)
        self.highlighted = self.get_option_index(target)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id
        project = None if option_id == self.ALL_ID else self._names.get(option_id or "")
        self.post_message(self.Chosen(project))
