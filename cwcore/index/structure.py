"""Deterministic structural detection: question, request, correction, answer and decision spans.

Spans are found by sentence-level cue rules (English and Italian), never by a model, so the same
text always yields the same annotations. Offsets are characters into the document text (parts
joined by the part separator). A turn with a ``decision`` span is a decision candidate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cwcore.model import Annotation, DocumentPart
from cwcore.store.limits import MAX_ANNOTATION_TEXT_BYTES, MAX_ANNOTATIONS, PART_SEPARATOR

RELATIONS = ("question", "request", "correction", "answer", "decision")

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$|(?=\n))", re.MULTILINE)
_QUESTION_START = re.compile(
    r"(?i)^(?:why|how|what|when|where|which|who|whose|is|are|was|were|does|do|did|can|could|"
    r"should|would|will|perch[eé]|come|cosa|che cosa|quando|dove|quale|quali|chi|pu[oò]i?)\b"
)
_CORRECTION_INNER = (
    r"\b(?:instead of|rather than|i meant|should have been|that'?s wrong|"
    r"not what i (?:asked|meant)|you misunderstood)\b"
)
_CORRECTION = re.compile(
    r"(?i)^(?:no\b|nope\b|actually\b|wrong\b|not quite\b|that'?s not\b|that is not\b|instead\b|"
    r"don'?t\b|do not\b|stop\b|revert\b|undo\b|invece\b|sbagliato\b|non [eè]\b|anzi\b|"
    r"non (?:va|funziona)\b)|" + _CORRECTION_INNER
)
#: The part of :data:`_CORRECTION` that may match anywhere in a sentence.
_CORRECTION_ANYWHERE = re.compile(r"(?i)" + _CORRECTION_INNER)
_REQUEST = re.compile(
    r"(?i)^(?:please|pls|can you|could you|would you|let'?s|fix|add|implement|make|create|write|"
    r"update|remove|delete|rename|refactor|run|change|move|use|try|check|show|explain|help|build|"
    r"install|debug|investigate|find|look|per favore|puoi|potresti|aggiungi|correggi|fai|crea|"
    r"scrivi|rimuovi|usa|prova|controlla|mostra|spiega|sistema|modifica|implementa)\b"
)
_DECISION = re.compile(
    r"(?i)\b(?:we(?:'ll| will| should| are going to)? "
    r"(?:use|go with|keep|switch to|stick with|adopt|drop)|"
    r"let'?s (?:use|go with|keep|switch to|stick with|adopt|drop)|decided|decision:|going with|"
    r"we chose|i'?ll use|settled on|the plan is|abbiamo deciso|useremo|decisione|scegliamo)\b"
)


def _sentences(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _SENTENCE.finditer(text):
        start, end = m.span()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end - start >= 3:
            out.append((start, end))
    return out


def detect(parts: Sequence[DocumentPart]) -> list[Annotation]:
    """Structural annotations of a document's parts, in text order, capped at the admission
    limit. Only prose parts (kind ``text``) of users and assistants are read."""
    found: list[Annotation] = []
    offset = 0
    pending_question = False
    for index, part in enumerate(parts):
        if index:
            offset += len(PART_SEPARATOR)
        text = part.text
        if part.kind == "text" and part.role == "user":
            asked = False
            # Cues that may match anywhere in a sentence are looked for in the whole text once:
            # a match inside a sentence is one in the text too (sentences are bounded by
            # whitespace or [.!?], non-word characters for ``\b``). Without one, a sentence is
            # a correction only by its start, and holds no decision.
            corrected = (
                _CORRECTION.search if _CORRECTION_ANYWHERE.search(text) else _CORRECTION.match
            )
            decides = _DECISION.search(text) is not None
            for start, end in _sentences(text):
                sentence = text[start:end]
                relation = None
                if corrected(sentence):
                    relation = "correction"
                elif sentence.endswith("?") or _QUESTION_START.match(sentence):
                    relation = "question"
                    asked = True
                elif _REQUEST.match(sentence):
                    relation = "request"
                if relation:
                    found.append(
                        Annotation(relation, offset + start, offset + end, part.message_key)
                    )
                if decides and _DECISION.search(sentence):
                    found.append(
                        Annotation("decision", offset + start, offset + end, part.message_key)
                    )
            pending_question = asked
        elif part.kind == "text" and part.role == "assistant":
            if pending_question and text.strip():
                paragraph_end = text.find("\n\n")
                end = len(text) if paragraph_end == -1 else paragraph_end
                start = len(text) - len(text.lstrip())
                if end > start:
                    found.append(
                        Annotation("answer", offset + start, offset + end, part.message_key)
                    )
                pending_question = False
            # A decision cue inside a sentence is also one in the whole text (a sentence is
            # bounded by whitespace or [.!?] on both sides, non-word characters for ``\b``), so
            # a text without any skips the sentence split: most assistant prose has none.
            if _DECISION.search(text) is not None:
                for start, end in _sentences(text):
                    if _DECISION.search(text[start:end]):
                        found.append(
                            Annotation("decision", offset + start, offset + end, part.message_key)
                        )
        offset += len(text)
    found.sort(key=lambda a: (a.start, a.end, a.relation))
    # Stay inside the admission limits: at most 4,096 spans and 1 MiB of annotated text.
    kept: list[Annotation] = []
    budget = MAX_ANNOTATION_TEXT_BYTES
    text = PART_SEPARATOR.join(p.text for p in parts) if found else ""
    for a in found[:MAX_ANNOTATIONS]:
        size = len(text[a.start : a.end].encode("utf-8", "surrogatepass"))
        if size > budget:
            break
        budget -= size
        kept.append(a)
    return kept


def is_decision_candidate(annotations: Sequence[Annotation]) -> bool:
    return any(a.relation == "decision" for a in annotations)
