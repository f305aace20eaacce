"""How the semantic index's progress reads, for ``cw index status`` and the TUI index view.

Both take the index status's semantic progress (:class:`cwcore.contract.index.SemanticProgress`):
``embedded`` windows with vectors, ``total`` published windows, ``pending`` windows after the
handler's cursor, ``progress`` (the share passed), ``state`` (``disabled``, ``waiting``,
``embedding``, ``complete``, ``revalidating``), ``partial``, ``model`` and ``mode``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from cwcore.contract.index import SemanticProgress

#: What search does with the vectors in each state.
SEARCH_USES = {
    "disabled": "semanticRetrieval is off: search is lexical only",
    "waiting": "nothing embedded yet: search is lexical only",
    "embedding": "partial: search uses the vectors embedded so far",
    "complete": "search uses every published window's vector",
    "revalidating": "a rebuild renumbered the windows: the vectors are checked again (and kept "
    "where their window did not change) before they count",
}
STATE_STYLE = {
    "disabled": "dim",
    "waiting": "bold #d29922",
    "embedding": "bold #d29922",
    "complete": "bold #3fb950",
    "revalidating": "bold #d29922",
}


def summary(sem: SemanticProgress) -> Text:
    """``Semantic  12,345 / 22,814 windows embedded (54%) · 10,469 pending``."""
    state = sem.state
    text = Text.assemble(("Semantic  ", "bold"))
    if state == "disabled":
        text.append("disabled", "dim")
        return text
    text.append(f"{sem.embedded:,} / {sem.total:,}", STATE_STYLE.get(state, ""))
    text.append(f" windows embedded ({sem.progress:.0%})")
    pending = sem.pending
    if state == "revalidating":
        text.append(" · revalidating after a rebuild", "dim")
    else:
        text.append(f" · {pending:,} pending" if pending else " · complete", "dim")
    return text


def detail(sem: SemanticProgress, rate: float | None = None) -> Text:
    """What search uses, the model and mode, and (given a rate in windows/s) the time left."""
    state = sem.state
    text = Text()
    text.append(SEARCH_USES.get(state, state), STATE_STYLE.get(state, ""))
    if state == "disabled":
        return text
    if sem.model:
        text.append(" · model ", "dim")
        text.append(sem.model)
        text.append(f" ({sem.mode} mode)", "dim")
    else:
        text.append(f" · {sem.mode} mode", "dim")
    pending = sem.pending
    if rate and pending:
        text.append(f" · {rate:,.1f} windows/s, about {_left(pending / rate)} left", "dim")
    return text


def _left(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
