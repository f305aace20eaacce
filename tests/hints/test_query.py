"""Query extraction (spec 001 step 2): units, stopwords, literals, cues, no-query."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwcore.hints.query import extract, is_host_generated
from cwcore.text.stopwords import STOPWORDS, is_stopword
from tests.helpers import examples

ACKS_EN = [
    "ok",
    "OK!!",
    "ok thanks",
    "Thanks, sounds good.",
    "yes please, go ahead",
    "got it, continue",
    "perfect, that's great",
    "lgtm",
    "fix it again please",
    "do it without problem",
    "try again",
    "still broken, check it",
]
ACKS_IT = [
    "grazie mille",
    "va bene, procedi",
    "Perfetto!",
    "Sì, continua pure",
    "ok grazie",
    "Posso farlo senza problema? solo tutte le volte",
    "correggi di nuovo",
    "PERCHÉ non funziona?",
    "d'accordo, andiamo avanti",
    "ｏｋ",
]


@pytest.mark.parametrize("message", ACKS_EN + ACKS_IT)
def test_no_topic_messages(message: str) -> None:
    query = extract(message)
    assert query.empty and query.reason == "no-topic", [u.literal for u in query.units]


def test_spec_stopwords_and_ui_terms() -> None:
    for word in ("posso", "solo", "senza", "problema", "volta", "tutte", "without", "problem"):
        assert is_stopword(word)
    for word in ("schermate", "premere", "input"):
        assert word not in STOPWORDS
    query = extract("nelle schermate bisogna premere input")
    assert [u.literal for u in query.units] == ["schermate", "premere", "input"]


def test_stopword_lookup_folds_case_accents_and_compatibility() -> None:
    for form in ("Perché", "PERCHE", "perche", "perche\u0301", "ｐｅｒｃｈｅ"):
        assert is_stopword(form), form


def test_literal_units_keep_their_exact_text() -> None:
    message = "Why does REAP_DRAIN crash in src/reaper/drain.py with --no-cache and parseConfig()?"
    query = extract(message)
    kinds = {u.literal: u.kind for u in query.units}
    assert kinds["REAP_DRAIN"] == "error"
    assert kinds["src/reaper/drain.py"] == "path"
    assert kinds["--no-cache"] == "flag"
    assert kinds["parseConfig"] == "symbol"
    assert kinds["crash"] == "keyword"
    for unit in query.units:
        assert message[unit.start : unit.end] == unit.literal


def test_literals_stay_searchable_even_when_they_look_like_stopwords() -> None:
    query = extract('what does `continue` do with "the same" and --again?')
    literals = {u.literal: u.kind for u in query.units}
    assert literals["continue"] == "backtick"
    assert literals["the same"] == "phrase"
    assert literals["--again"] == "flag"
    assert extract("`ok`").units[0].literal == "ok"


def test_qualified_identifiers_and_technologies() -> None:
    query = extract("loader.load_file stalls under rust and k8s")
    kinds = {u.literal: u.kind for u in query.units}
    assert kinds == {"loader.load_file": "symbol", "stalls": "keyword", "rust": "technology",
                     "k8s": "technology"}  # fmt: skip


def test_prose_slashes_are_not_paths() -> None:
    assert extract("and/or yes/no").empty
    assert extract("cwcore/hints.py").units[0].kind == "path"


@pytest.mark.parametrize(
    ("message", "cue"),
    [
        ("what did we decide about the queue last time?", "last time"),
        ("as we discussed earlier, the reaper", "earlier"),
        ("remember the reaper bug?", "remember"),
        ("the reaper crashed again", "again"),
        ("previously the reaper drained", "previously"),
        ("l'altra volta il reaper", "l'altra volta"),
        ("L’altra volta il reaper", "l'altra volta"),
        ("prima il reaper funzionava", "prima"),
        ("avevamo deciso di usare il reaper", "avevamo deciso"),
        ("we decided to drain the reaper", "we decided"),
    ],
)
def test_historical_cues(message: str, cue: str) -> None:
    query = extract(message)
    assert cue in query.cues and query.historical
    assert not query.empty


def test_no_cue_in_plain_requests() -> None:
    assert not extract("add a reaper drain timeout").historical


def test_host_generated_is_not_a_real_user_message() -> None:
    for text in (
        "<command-name>/clear</command-name>",
        "<local-command-stdout>x</local-command-stdout>",
        # The host wrappers the peers' files showed (issue 31): never a prompt to hint.
        "<local-command-caveat>Caveat: resumed</local-command-caveat>",
        "<recommended_plugins>\n- github\n</recommended_plugins>",
        '<skill-context name="pdf">use the skill</skill-context>',
    ):
        assert is_host_generated(text)
        assert extract(text).reason == "host-generated"


def test_query_hash_is_stable_and_specific() -> None:
    a, b = extract("REAP_DRAIN crash"), extract("REAP_DRAIN crash")
    assert a.hash() == b.hash() and len(a.hash()) == 16
    assert a.hash() != extract("REAP_DRAIN crash last time").hash()


@settings(max_examples=examples(300), suppress_health_check=list(HealthCheck), deadline=None)
@given(st.text(max_size=200))
def test_units_are_exact_spans(message: str) -> None:
    for unit in extract(message).units:
        assert message[unit.start : unit.end] == unit.literal
        assert unit.terms
