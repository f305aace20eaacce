"""The four-stage processor pipeline of memory selection, with traces.

1. :class:`StatusFilterProcessor` — only ``status: active`` passes (``status:<status>``).
2. :class:`ProfileScopeProcessor` — a record with a ``profile_id`` other than the session's
   resolved profile is hard-blocked (``profile_mismatch:<profile_id>``); records without one
   (legacy) pass with any profile.
3. :class:`BasicScopeProcessor` — a project-scoped record passes only in its own project
   (``project_mismatch:<project>``); global and domain records always pass.
4. :class:`NegativeScopeProcessor` — a record is excluded when any ``does_not_apply_when`` or
   ``known_exceptions`` phrase matches the prompt or the working-directory context
   (``does_not_apply_when:<phrase>``, ``known_exceptions:<phrase>``). Matching is deterministic
   and phrase-based: the phrase's words must appear consecutively, each equal to the context's
   word or — for morphological variants — one a prefix of the other when the shorter has at
   least :data:`MIN_PREFIX` letters (``publish`` matches ``publishing``).

Each run emits a trace ``{"processor", "input_count", "output_count", "excluded_ids",
"exclusion_reasons"}`` with a reason per excluded id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cwcore.text.tokenize import fold

MIN_PREFIX = 4
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """Folded words (case, accents, compatibility forms) of ``text``."""
    return [fold(w) for w in _WORD.findall(text or "")]


def _word_match(phrase_word: str, context_word: str) -> bool:
    if phrase_word == context_word:
        return True
    short, long_ = sorted((phrase_word, context_word), key=len)
    return len(short) >= MIN_PREFIX and long_.startswith(short)


def phrase_matches(phrase: str, context: list[str]) -> bool:
    """True when the phrase's words occur consecutively in ``context`` (prefix variants ok)."""
    target = words(phrase)
    if not target:
        return False
    n = len(target)
    for i in range(len(context) - n + 1):
        if all(_word_match(target[j], context[i + j]) for j in range(n)):
            return True
    return False


@dataclass(frozen=True)
class Context:
    """What the pipeline knows about the turn."""

    prompt: str
    profile: str | None = None
    project: str | None = None
    cwd: str | None = None
    words: list[str] = field(default_factory=list)

    @classmethod
    def make(
        cls,
        prompt: str,
        *,
        profile: str | None = None,
        project: str | None = None,
        cwd: str | None = None,
    ) -> Context:
        return cls(prompt, profile, project, cwd, words(prompt) + words(cwd or ""))


@dataclass
class Trace:
    processor: str
    input_count: int
    output_count: int
    excluded_ids: list[str]
    exclusion_reasons: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "processor": self.processor,
            "input_count": self.input_count,
            "output_count": self.output_count,
            "excluded_ids": self.excluded_ids,
            "exclusion_reasons": self.exclusion_reasons,
        }


class Processor:
    name = "Processor"

    def reason(self, record: dict[str, Any], ctx: Context) -> str | None:
        raise NotImplementedError

    def run(
        self, records: list[dict[str, Any]], ctx: Context
    ) -> tuple[list[dict[str, Any]], Trace]:
        kept: list[dict[str, Any]] = []
        reasons: dict[str, str] = {}
        for record in records:
            why = self.reason(record, ctx)
            if why is None:
                kept.append(record)
            else:
                reasons[str(record["id"])] = why
        trace = Trace(self.name, len(records), len(kept), list(reasons), reasons)
        return kept, trace


class StatusFilterProcessor(Processor):
    name = "StatusFilterProcessor"

    def reason(self, record: dict[str, Any], ctx: Context) -> str | None:
        status = record.get("status")
        return None if status == "active" else f"status:{status}"


class ProfileScopeProcessor(Processor):
    name = "ProfileScopeProcessor"

    def reason(self, record: dict[str, Any], ctx: Context) -> str | None:
        profile = record.get("profile_id")
        if profile is None or profile == ctx.profile:
            return None
        return f"profile_mismatch:{profile}"


class BasicScopeProcessor(Processor):
    name = "BasicScopeProcessor"

    def reason(self, record: dict[str, Any], ctx: Context) -> str | None:
        scope = record.get("scope") or {}
        if scope.get("type") != "project" or scope.get("name") == ctx.project:
            return None
        return f"project_mismatch:{scope.get('name')}"


class NegativeScopeProcessor(Processor):
    name = "NegativeScopeProcessor"

    def reason(self, record: dict[str, Any], ctx: Context) -> str | None:
        for field_name in ("does_not_apply_when", "known_exceptions"):
            for phrase in record.get(field_name) or []:
                if phrase_matches(phrase, ctx.words):
                    return f"{field_name}:{phrase}"
        return None


PIPELINE: tuple[Processor, ...] = (
    StatusFilterProcessor(),
    ProfileScopeProcessor(),
    BasicScopeProcessor(),
    NegativeScopeProcessor(),
)


def run_pipeline(
    records: list[dict[str, Any]], ctx: Context, pipeline: tuple[Processor, ...] = PIPELINE
) -> tuple[list[dict[str, Any]], list[Trace]]:
    traces: list[Trace] = []
    for processor in pipeline:
        records, trace = processor.run(records, ctx)
        traces.append(trace)
    return records, traces
