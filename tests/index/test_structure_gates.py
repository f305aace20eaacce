"""Structural detection's whole-text gates (issue 36): the output is the sentence-by-sentence
rule's exactly, on open-ended text built from its cue words and sentence punctuation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.index import structure
from cwcore.index.structure import _CORRECTION, _DECISION, _QUESTION_START, _REQUEST, _sentences
from cwcore.model import Annotation, DocumentPart
from cwcore.store.limits import PART_SEPARATOR


def _reference(parts: Sequence[DocumentPart]) -> list[tuple[str, int, int, str]]:
    """The rule without gates: every sentence checked by every cue (the code before the gates)."""
    found: list[Annotation] = []
    offset = 0
    pending = False
    for index, part in enumerate(parts):
        if index:
            offset += len(PART_SEPARATOR)
        text = part.text
        if part.kind == "text" and part.role == "user":
            asked = False
            for start, end in _sentences(text):
                sentence = text[start:end]
                relation = None
                if _CORRECTION.search(sentence):
                    relation = "correction"
                elif sentence.endswith("?") or _QUESTION_START.match(sentence):
                    relation, asked = "question", True
                elif _REQUEST.match(sentence):
                    relation = "request"
                if relation:
                    found.append(
                        Annotation(relation, offset + start, offset + end, part.message_key)
                    )
                if _DECISION.search(sentence):
                    found.append(
                        Annotation("decision", offset + start, offset + end, part.message_key)
                    )
            pending = asked
        elif part.kind == "text" and part.role == "assistant":
            if pending and text.strip():
                paragraph_end = text.find("\n\n")
                end = len(text) if paragraph_end == -1 else paragraph_end
                start = len(text) - len(text.lstrip())
                if end > start:
                    found.append(
                        Annotation("answer", offset + start, offset + end, part.message_key)
                    )
                pending = False
            for start, end in _sentences(text):
                if _DECISION.search(text[start:end]):
                    found.append(
                        Annotation("decision", offset + start, offset + end, part.message_key)
                    )
        offset += len(text)
    found.sort(key=lambda a: (a.start, a.end, a.relation))
    return [(a.relation, a.start, a.end, a.message_key) for a in found]


# Cue words of every pattern (and pieces that straddle them), punctuation that ends sentences,
# and word characters that may touch a cue on either side.
PIECES = [
    "instead of",
    "rather than",
    "i meant",
    "that's wrong",
    "thats wrong",
    "not what i asked",
    "you misunderstood",
    "no",
    "actually",
    "stop",
    "non è",
    "we will use",
    "we'll use",
    "let's use",
    "decided",
    "decision:",
    "going with",
    "settled on",
    "useremo",
    "why",
    "how",
    "please",
    "fix",
    "can you",
    "x",
    "é",
    "_",
    "9",
    " ",
    "  ",
    ".",
    "!",
    "?",
    "...",
    "\n",
    "\n\n",
    ":",
    ",",
    "'",
    "Instead Of",
    "DECIDED",
    "inst",
    "ead of",
]
TEXT = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)
ROLES: list[Literal["user", "assistant"]] = ["user", "assistant"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ROLES), TEXT), min_size=1, max_size=4))
def test_detect_equals_the_sentence_by_sentence_rule(
    turns: list[tuple[Literal["user", "assistant"], str]],
) -> None:
    parts = [
        DocumentPart(message_key=f"m{i}", role=role, kind="text", text=text)
        for i, (role, text) in enumerate(turns)
    ]
    got = [(a.relation, a.start, a.end, a.message_key) for a in structure.detect(parts)]
    assert got == _reference(parts)


def test_a_cue_inside_a_later_sentence_is_found() -> None:
    text = "It broke. You should use the other one instead of this. We decided: keep it!"
    parts = [DocumentPart(message_key="u", role="user", kind="text", text=text)]
    got = [(a.relation, a.start, a.end) for a in structure.detect(parts)]
    assert got == [(r, s, e) for r, s, e, _ in _reference(parts)]
    assert {"correction", "decision"} <= {r for r, _, _ in got}
