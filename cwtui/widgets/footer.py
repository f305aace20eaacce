"""The footer: every action of the screen, wrapped onto as many lines as the width needs.

Textual's ``Footer`` is one line that scrolls sideways, so at 80 columns most of a screen's
keys fall off its end. :class:`KeysFooter` packs the same bindings (those with ``show``; one
entry per action, the first key's display) left to right and wraps, at most :data:`MAX_LINES`
lines, then the command palette key. A disabled action is dimmed; a click on an entry presses
its key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.widget import Widget

MAX_LINES = 3
GAP = 2


def usable(screen: Any, key: str) -> bool:
    """Whether ``key`` reaches ``screen``'s bindings: on a screen that sends typing to its query
    (:meth:`~cwtui.screens.common.LiveScreen.takes_key`), a key that types a character does not,
    so the footer and the help name another key of the same action (F1 for ``?``)."""
    takes_key = getattr(screen, "takes_key", None)
    return takes_key is None or bool(takes_key(key))


def key_display(screen: Any, key: str, binding: Binding) -> str:
    """How ``key`` of ``binding`` reads: the binding's own display (``q ^q``), except on a
    screen that sends typing to its query, where it names only keys that work there (``^q``)."""
    typing = getattr(screen, "typing_field", None)
    if binding.key_display and (typing is None or typing() is None):
        return str(screen.app.get_key_display(binding))
    return str(screen.app.get_key_display(replace(binding, key=key, key_display=None)))


@dataclass(frozen=True)
class KeyItem:
    key: str  # the key to press (the binding's first key)
    display: str
    description: str
    enabled: bool

    @property
    def width(self) -> int:
        return cell_len(self.display) + 1 + cell_len(self.description)


def layout(items: list[KeyItem], width: int, max_lines: int = MAX_LINES) -> list[list[KeyItem]]:
    """The items packed into lines of at most ``width`` cells (``GAP`` between items); items
    past ``max_lines`` lines are dropped (the help screen, ``?``, lists them all)."""
    lines: list[list[KeyItem]] = [[]]
    used = 0
    for item in items:
        need = item.width + (GAP if lines[-1] else 0)
        if lines[-1] and used + need > width:
            if len(lines) == max_lines:
                break
            lines.append([])
            used, need = 0, item.width
        lines[-1].append(item)
        used += need
    return [line for line in lines if line]


class KeysFooter(Widget):
    """The keys of the current screen, wrapped."""

    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: auto;
        max-height: 3;
        padding: 0 1;
        background: $footer-background;
        color: $footer-description-foreground;
    }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Any) -> None:
        if self.is_attached and screen is self.screen:
            self.refresh(layout=True)

    def items(self) -> list[KeyItem]:
        """One item per action shown; consecutive bindings of one ``Binding.Group`` share an
        item (``n/N match``), whose key is the first one's."""
        seen: set[str] = set()
        out: list[KeyItem] = []
        last_group: object = None
        for key, (_, binding, enabled, _tooltip) in self.screen.active_bindings.items():
            if not binding.show or binding.action in seen or not usable(self.screen, key):
                continue
            seen.add(binding.action)
            display = key_display(self.screen, key, binding)
            if binding.group is not None and binding.group is last_group and out:
                prev = out[-1]
                out[-1] = KeyItem(prev.key, f"{prev.display}/{display}", prev.description, True)
                continue
            last_group = binding.group
            description = binding.group.description if binding.group else binding.description
            out.append(KeyItem(key, display, description, bool(enabled)))
        palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if palette is not None and self.app.ENABLE_COMMAND_PALETTE:
            out.append(
                KeyItem(palette[1].key, self.app.get_key_display(palette[1]), "palette", True)
            )
        return out

    def _lines(self, width: int) -> list[list[KeyItem]]:
        return layout(self.items(), max(10, width))

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        return max(1, len(self._lines(width)))

    def render(self) -> Text:
        key_style = "bold " + str(self.app.current_theme.accent or "yellow")
        text = Text(no_wrap=True, overflow="ellipsis")
        for n, line in enumerate(self._lines(self.content_size.width)):
            if n:
                text.append("\n")
            for i, item in enumerate(line):
                if i:
                    text.append(" " * GAP)
                dim = "" if item.enabled else " dim"
                text.append(item.display, key_style + dim)
                text.append(" " + item.description, "dim" if not item.enabled else "")
        return text

    def on_click(self, event: events.Click) -> None:
        x, y = event.x - self.gutter.left, event.y
        lines = self._lines(self.content_size.width)
        if not 0 <= y < len(lines):
            return
        at = 0
        for item in lines[y]:
            if at <= x < at + item.width:
                if item.enabled:
                    self.app.simulate_key(item.key)
                else:
                    self.app.bell()
                return
            at += item.width + GAP
