"""The tokenizer: examples from the contract, and properties over arbitrary text."""

from __future__ import annotations

import time
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.text.tokenize import MAX_TOKEN_CHARS, fold, term_counts, tokens, tokens_with_offsets
from tests.helpers import examples


def test_identifier_splitting_keeps_the_whole_anchor() -> None:
    assert tokens("parseHTTPResponse") == ["parsehttpresponse", "parse", "http", "response"]
    assert tokens("snake_case_name") == ["snake_case_name", "snake", "case", "name"]
    assert tokens("HTTP2Server") == ["http2server", "http2", "server"]
    assert tokens("getX") == ["getx", "get"]  # one-letter parts are dropped
    assert tokens("__init__") == ["__init__", "init"]


def test_dotted_names_and_paths() -> None:
    assert tokens("os.path.join") == ["os.path.join", "os", "path", "join"]
    assert tokens("see src/cw/api.py.") == [
        "see",
        "src/cw/api.py",
        "src",
        "cw",
        "api",
        "py",
        "api.py",
    ]
    assert tokens("std::vector") == ["std::vector", "std", "vector"]
    assert tokens("--no-rerank") == ["no-rerank", "no", "rerank"]
    assert tokens(r"C:\Users\me\notes.md")[0] == r"c:\users\me\notes.md"
    assert "notes.md" in tokens(r"C:\Users\me\notes.md")


def test_numbers_are_kept() -> None:
    assert tokens("error 42 at 3.14") == ["error", "42", "at", "3.14", "3", "14"]
    assert tokens("v1.2.3") == ["v1.2.3", "v1", "2", "3"]


def test_case_and_accent_folding() -> None:
    assert tokens("Café NAÏVE résumé") == ["cafe", "naive", "resume"]
    assert tokens("cafe\u0301") == ["cafe"]  # decomposed accent stays inside the word
    assert tokens("Straße") == ["strasse"]
    assert fold("ＡＢＣ") == "abc"  # full-width compatibility forms


def test_cjk_bigrams_beside_single_characters() -> None:
    assert tokens("検索エンジン") == [
        "検", "検索", "索", "索エ", "エ", "エン", "ン", "ンジ", "ジ", "ジン", "ン"
    ]  # fmt: skip
    assert tokens("中文") == ["中", "中文", "文"]
    assert tokens("한국어") == ["한", "한국", "국", "국어", "어"]
    # A CJK run next to Latin letters is its own run; half-width kana fold to full width.
    assert tokens("Python是语言") == ["python", "是", "是语", "语", "语言", "言"]
    assert tokens("ｶﾞ") == ["カ", "ガ"]  # the voiced form is the folded bigram


def test_long_blobs_are_dropped() -> None:
    blob = "a" * (MAX_TOKEN_CHARS + 1)
    assert tokens(f"x {blob} y") == ["x", "y"]
    assert tokens(f"{blob}.py") == ["py"]


def test_offsets_slice_to_the_source_span() -> None:
    text = "Fix parseHTTPResponse in src/api.py 検索"
    for term, start, end in tokens_with_offsets(text):
        assert fold(text[start:end]) == term
    assert tokens_with_offsets("a bc")[1] == ("bc", 2, 4)


def test_short_messages_tokenize_in_microseconds() -> None:
    text = "I will run the tests now and report back what fails."
    tokens(text)
    rounds = 2000
    start = time.perf_counter()
    for _ in range(rounds):
        tokens(text)
    per_call = (time.perf_counter() - start) / rounds
    assert per_call < 100e-6  # measured ≈ 3 µs; the bound only catches pathologies


_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("aZ_9./\\:@- \u0301\u3099検索エンｶﾞ한ㄱㅏßİﬁ")),
    ),
    max_size=60,
)


@settings(max_examples=examples(400), deadline=None)
@given(_text)
def test_never_crashes_and_agrees_with_offsets(text: str) -> None:
    with_offsets = tokens_with_offsets(text)
    assert tokens(text) == [t for t, _, _ in with_offsets]
    for term, start, end in with_offsets:
        assert term
        assert 0 <= start < end <= len(text)
        assert fold(text[start:end]) == term


_ascii_words = st.lists(
    st.sampled_from(
        [
            *("the", "The", "HTTP", "parseHTTPResponse", "os.path.join", "a_b", "src/cw/api.py"),
            *("x", "3.14", "no-rerank", "getX", "e.g.", "OK", "x" * 130, "ab", "42"),
        ]
    ),
    max_size=40,
).map(" ".join)


@settings(max_examples=examples(400), deadline=None)
@given(st.one_of(_text, _ascii_words))
def test_term_counts_are_the_counted_tokens(text: str) -> None:
    # Repeated words (split once, counted n times) and every ASCII special case included.
    assert term_counts(text) == dict(Counter(tokens(text)))


@settings(max_examples=examples(400), deadline=None)
@given(_text)
def test_fold_is_idempotent(text: str) -> None:
    assert fold(fold(text)) == fold(text)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=2))
def test_every_cjk_bigram_is_present(run: str) -> None:
    terms = set(tokens(run))
    assert all(run[i : i + 2] in terms for i in range(len(run) - 1))
    assert set(run) <= terms


@settings(max_examples=examples(200), deadline=None)
@given(st.from_regex(r"[a-z]{2,8}([A-Z][a-z]{2,8}){1,3}", fullmatch=True))
def test_camel_case_parts_are_present(word: str) -> None:
    terms = tokens(word)
    assert terms[0] == word.lower()
    pieces = [p.lower() for p in __import__("re").findall(r"[A-Z]?[a-z]+", word)]
    assert terms[1:] == pieces
