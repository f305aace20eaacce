"""What ``memory.context`` and ``bound.memory`` answer, as frozen dataclasses: one turn's memory
injection block with the traces of the selection that built it.

:func:`cwcore.memory.injection.build` assembles the block as a dictionary (the hooks and the
hints' memory view keep a bounded summary of it, :mod:`cwcore.memory.diagnostics`); the two
method handlers turn that answer into a :class:`MemoryContext` and serialize it once with
``to_json()``, and :class:`cwcore.api.Archive` rebuilds it with ``from_json()``.

The two answers share one shape: ``bound.memory`` is the summary of a project-bound turn (every
id list at most a few dozen long, a cut list saying how many ids it left out) and carries its
``project`` first; ``memory.context`` carries the full lists and no project. The JSON is derived
from the fields (:mod:`cwcore.contract.codec`; :class:`MemoryContext` writes its two shapes by
hand): the keys and values the engine has always answered, ``from_json(x).to_json() == x`` as
parsed JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cwcore.contract.codec import Record, field, pairs


class ProcessorTrace(Record):
    """One pipeline processor's run: records in and out, the ids it excluded (in order) with
    each one's reason. ``excluded_more`` counts excluded ids a bounded answer left out (None
    when the list is whole). The pipeline's own keys are snake_case (the answer always was)."""

    processor: str
    input_count: int = field(name="input_count")
    output_count: int = field(name="output_count")
    excluded_ids: tuple[str, ...] = field(name="excluded_ids")
    exclusion_reasons: tuple[tuple[str, str], ...] = pairs(name="exclusion_reasons")
    excluded_more: int | None = field(default=None, omit_none=True)


class LeftOut(Record):
    """A record that passed the pipeline but is not in the block, and why (``not-relevant``,
    ``selected-limit``, ``hard-rule-limit``, ``scratchpad-limit``, ``contested:not-relevant``,
    ``contested-limit`` or ``budget``; None in a kept selection that recorded no reason)."""

    id: str
    reason: str | None = None


def _write_scores(scores: tuple[tuple[str, float], ...]) -> list[dict[str, Any]]:
    return [{"id": rid, "score": score} for rid, score in scores]


def _read_scores(body: list[Mapping[str, Any]]) -> tuple[tuple[str, float], ...]:
    return tuple((s["id"], s["score"]) for s in body)


class MemoryRanking(Record):
    """How the relevant records were ranked: ``mode`` (``hybrid``, ``fts`` or ``none``), the
    weights of full-text and semantic scores, and each ranked record's ``(id, score)``, best
    first (written as ``{"id", "score"}`` objects). ``scores_more`` counts scores a bounded
    answer left out (None when the list is whole). A kept selection may hold no mode or
    weights (None)."""

    mode: str | None
    weights: tuple[tuple[str, float], ...] | None = pairs()
    scores: tuple[tuple[str, float], ...] = field(encode=_write_scores, decode=_read_scores)
    scores_more: int | None = field(default=None, omit_none=True)


@dataclass(frozen=True)
class MemoryContext:
    """One turn's memory injection block and how it was chosen.

    ``skipped`` says the prompt was trivial (``reason`` then says why: too short, a slash
    command, an acknowledgement); otherwise ``reason`` is ``nothing-to-inject`` when no section
    had anything, else None. ``block`` is the Markdown to inject (None when there is none),
    ``bytes`` its UTF-8 size and ``budget_bytes`` the budget it was built within (None for a
    skipped turn). ``sections`` lists the ids shown per section in block order; ``truncated``
    the sections the budget cut or dropped; ``traces`` each processor's run; ``unselected`` the
    candidates left out; ``ranking`` None for a skipped turn.

    ``project`` is the bound project of a ``bound.memory`` answer, None for ``memory.context``;
    ``unselected_more`` counts left-out records a bounded answer did not list."""

    skipped: bool
    reason: str | None
    block: str | None
    bytes: int
    budget_bytes: int | None
    sections: tuple[tuple[str, tuple[str, ...]], ...]
    truncated: tuple[str, ...]
    traces: tuple[ProcessorTrace, ...]
    unselected: tuple[LeftOut, ...]
    ranking: MemoryRanking | None
    project: str | None = None
    unselected_more: int | None = None

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {"skipped": self.skipped, "reason": self.reason}
        if self.project is not None:  # the bound answer names its project and block first
            out: dict[str, Any] = {"project": self.project, "block": self.block, **head}
        else:
            out = {**head, "block": self.block}
        out["bytes"] = self.bytes
        if self.project is None and self.skipped:
            # An unbound trivial prompt answers only that it was skipped, and why.
            out["traces"] = [t.to_json() for t in self.traces]
            return out
        out["budgetBytes"] = self.budget_bytes
        out["sections"] = {name: list(ids) for name, ids in self.sections}
        out["truncated"] = list(self.truncated)
        out["traces"] = [t.to_json() for t in self.traces]
        out["unselected"] = [u.to_json() for u in self.unselected]
        if self.unselected_more is not None:
            out["unselectedMore"] = self.unselected_more
        if self.ranking is not None:
            out["ranking"] = self.ranking.to_json()
        return out

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryContext:
        ranking = body.get("ranking")
        return cls(
            skipped=body["skipped"],
            reason=body["reason"],
            block=body["block"],
            bytes=body["bytes"],
            budget_bytes=body.get("budgetBytes"),
            sections=tuple((name, tuple(ids)) for name, ids in body.get("sections", {}).items()),
            truncated=tuple(body.get("truncated", ())),
            traces=tuple(ProcessorTrace.from_json(t) for t in body["traces"]),
            unselected=tuple(LeftOut.from_json(u) for u in body.get("unselected", ())),
            ranking=MemoryRanking.from_json(ranking) if ranking is not None else None,
            project=body.get("project"),
            unselected_more=body.get("unselectedMore"),
        )
