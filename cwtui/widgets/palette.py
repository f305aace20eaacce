"""Command palette entries for every cw action (ctrl+p).

Derived, not listed by hand: the provider offers the registered top-level screens
(:data:`cwtui.screens.MODES`) and every binding active on the screen the palette was opened from
whose id starts with ``cw.``, so a new binding is in the palette the moment it exists. Widget
internals (cursor moves, scrolling) have no ``cw.`` id and stay out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cwtui.screens import MODES

Entry = tuple[str, str, Callable[[], Any]]


class CwCommands(Provider):
    """The cw actions available where the palette was opened."""

    def _entries(self) -> Iterator[Entry]:
        app = self.app
        for spec in MODES:
            yield (
                f"Go to {spec.title}",
                f"{spec.help} ({spec.key})",
                partial(app.switch_mode, spec.name),
            )
        seen: set[str] = set()
        for active in self.screen.active_bindings.values():
            binding = active.binding
            binding_id = binding.id or ""
            # Mode bindings are already offered above.
            if not binding_id.startswith("cw.") or binding_id.startswith("cw.mode."):
                continue
            if binding_id in seen:
                continue
            seen.add(binding_id)
            key = app.get_key_display(binding)
            yield (
                binding.tooltip or binding.description or binding.action,
                f"key {key} · {binding_id}",
                partial(app.run_action, binding.action, active.node),
            )

    async def discover(self) -> Hits:
        for name, help_text, command in self._entries():
            yield DiscoveryHit(name, command, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, command in self._entries():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), command, help=help_text)
