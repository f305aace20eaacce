"""Query extraction for preflight: what the latest user message is about.

Only the latest real user message is read. It yields *topic units*, each an exact span of the
message (``literal == message[start:end]``) with the folded index terms that search it:

* **identifiers** — backticked identifiers, file paths, qualified/camel/snake symbols, flags,
  error codes and messages, commit hashes, URLs and versions (the anchor extractor of
  :mod:`cwcore.index.anchors`, so indexing and preflight agree on what an anchor is);
* **phrases** — quoted (or backticked) text with white space inside;
* **technologies** — names like ``postgres`` or ``rocksdb``, kept even when short;
* **keywords** — the remaining words that are not stopwords (:mod:`cwcore.text.stopwords`).

Stopword lookup folds case, accents and compatibility forms and works on Unicode word
boundaries; it never rewrites the literal evidence. Backticked, qualified, path, flag and quoted
literals stay searchable even when they look like stopwords (```continue```). A message left with
no unit has no topic: preflight answers ``no-query`` without searching.

Historical cue words (``last time``, ``we decided``, ``remember``, ``again``, ``l'altra volta``,
``prima``, ``avevamo deciso`` …) are detected on the folded text; they route the request (an
excerpt needs explicit historical intent) and are never topic evidence themselves.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from cwcore.index import anchors as anchor_mod
from cwcore.text.stopwords import STOPWORDS
from cwcore.text.tokenize import fold, tokens, tokens_with_offsets

#: Characters of a message read for extraction (a pasted log beyond this is not searched).
MAX_MESSAGE_CHARS = 16_000
MAX_IDENTIFIERS = 8
MAX_PHRASES = 4
MAX_KEYWORDS = 12
MIN_KEYWORD = 3

#: Groups of unit kinds: identifiers rank before phrases, phrases before keywords.
IDENTIFIER_KINDS = frozenset({"error", "path", "symbol", "flag", "commit", "value", "backtick"})
PHRASE_KINDS = frozenset({"phrase"})

_TECHNOLOGIES = """
python rust golang typescript javascript java kotlin swift ruby rails php laravel scala
elixir erlang haskell clojure lua perl dart flutter react reactjs nextjs vue vuejs nuxt
svelte angular django flask fastapi express nodejs node deno bun npm pnpm yarn pip poetry
uv cargo gradle maven webpack vite esbuild babel tailwind postgres postgresql mysql mariadb
sqlite redis mongodb mongo cassandra rocksdb leveldb lmdb duckdb clickhouse elasticsearch
opensearch kafka rabbitmq nats grpc graphql protobuf docker podman kubernetes k8s helm
terraform ansible nginx apache caddy linux macos ubuntu debian alpine systemd wsl aws gcp
azure cloudflare vercel netlify heroku github gitlab git bitbucket jenkins numpy pandas
pytorch torch tensorflow onnx fastembed bm25 fts5 hnsw faiss pytest jest vitest mocha
playwright selenium cypress mypy ruff eslint prettier black textual typer rich asyncio
tokio websocket websockets oauth jwt saml ldap openai anthropic claude codex gemini llm
mcp regex json yaml toml xml html css scss markdown bash zsh fish powershell vim neovim
emacs vscode tmux ssh tls ssl http https dns tcp udp ipv6 utf8 unicode cjk sql nosql
"""
TECHNOLOGIES = frozenset(_TECHNOLOGIES.split())

# Historical cue phrases (folded). Word-bounded; an apostrophe variant is normalized first.
_CUES_EN = (
    "last time", "the other time", "the other day", "earlier", "previously", "previous session",
    "previous conversation", "last session", "last week", "yesterday", "we decided",
    "we agreed", "we discussed", "we talked about", "we said", "we chose", "we picked",
    "we used", "we had", "we did", "you said", "you told me", "you mentioned", "you suggested",
    "i told you", "i said", "i mentioned", "remember", "recall", "again", "as before",
    "like before", "did before", "back then", "as discussed", "did we", "have we", "once more",
)  # fmt: skip
_CUES_IT = (
    "l'altra volta", "altra volta", "l'ultima volta", "ultima volta", "la volta scorsa",
    "volta scorsa", "prima", "avevamo deciso", "abbiamo deciso", "avevamo detto",
    "abbiamo detto", "avevamo parlato", "abbiamo parlato", "avevamo discusso",
    "abbiamo discusso", "avevamo scelto", "abbiamo scelto", "avevi detto", "hai detto",
    "mi avevi", "ricordi", "ti ricordi", "ricordo", "ricordare", "ricorda", "di nuovo",
    "ancora una volta", "come prima", "in precedenza", "precedentemente", "ieri",
    "sessione precedente", "conversazione precedente",
)  # fmt: skip
CUES: tuple[str, ...] = tuple(dict.fromkeys(_CUES_EN + _CUES_IT))
_CUE_RE = re.compile(
    r"(?<![^\W_])(?:"
    + "|".join(
        re.escape(c).replace("'", "['\u2019\u2018\u02bc`]").replace(r"\ ", r"\s+")
        for c in sorted(CUES, key=len, reverse=True)
    )
    + r")(?![^\W_])",
    re.IGNORECASE,
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})

#: Openings of host-generated user-role text: a user-role message that starts with one is not a
#: real user message (it is neither a prompt nor topic evidence).
HOST_GENERATED = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "<user-prompt-submit-hook>",
    "<recommended_plugins>",
    "<skill-context",
    "<environment_context>",
    "<user_instructions>",
    "<system-reminder>",
    "Caveat: The messages below were generated by the user while running local commands",
)

_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
_NOT_SYMBOLS = frozenset({"e.g", "i.e", "etc", "n.b", "p.s", "a.k.a", "vs"})
_JOINERS = frozenset("./\\:@-")


@dataclass(frozen=True)
class Unit:
    """One topic unit: an exact span of the message and the folded terms that search it."""

    kind: str
    literal: str
    start: int
    end: int
    terms: tuple[str, ...]

    @property
    def group(self) -> str:
        if self.kind in IDENTIFIER_KINDS:
            return "identifier"
        if self.kind in PHRASE_KINDS:
            return "phrase"
        return "keyword"

    @property
    def literal_match(self) -> bool:
        """Identifiers and phrases are searched as case-sensitive literals as well."""
        return self.group != "keyword"


@dataclass(frozen=True)
class Query:
    """What a message is about. ``units`` empty means no topic (see ``reason``)."""

    message: str
    units: tuple[Unit, ...] = ()
    cues: tuple[str, ...] = ()
    reason: str | None = None
    _hash: str = field(default="", compare=False)

    @property
    def empty(self) -> bool:
        return not self.units

    @property
    def historical(self) -> bool:
        return bool(self.cues)

    @property
    def terms(self) -> list[str]:
        """Distinct BM25 terms of every unit, in unit order."""
        return list(dict.fromkeys(t for u in self.units for t in u.terms))

    def hash(self) -> str:
        """A stable digest of the extracted query (units and routing), 16 hex digits."""
        body = json.dumps(
            {
                "units": [[u.kind, u.literal, list(u.terms)] for u in self.units],
                "historical": self.historical,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def is_host_generated(message: str) -> bool:
    return message.lstrip().startswith(HOST_GENERATED)


def cue_spans(message: str) -> list[tuple[int, int, str]]:
    """``(start, end, cue)`` of the historical cue phrases in ``message`` (cue folded)."""
    return [
        (m.start(), m.end(), " ".join(fold(m.group().translate(_APOSTROPHES)).split()))
        for m in _CUE_RE.finditer(message)
    ]


def cues(message: str) -> tuple[str, ...]:
    """The historical cue phrases in ``message`` (folded, in order of appearance)."""
    return tuple(dict.fromkeys(c for _, _, c in cue_spans(message)))


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _whole_word(text: str, start: int, end: int) -> bool:
    return (start == 0 or not _is_word_char(text[start - 1])) and (
        end >= len(text) or not _is_word_char(text[end])
    )


def _is_cjk(term: str) -> bool:
    return (
        bool(term)
        and not term[0].isascii()
        and tokens(term[0]) == [term[0]]
        and any("\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7ff" for ch in term)
    )


def _identifier_terms(literal: str) -> tuple[str, ...]:
    """The whole folded token of a literal without white space (``src/a.py``, ``reap_drain``)."""
    found = tokens(literal)
    return (found[0],) if found else ()


def _phrase_terms(literal: str) -> tuple[str, ...]:
    found = list(dict.fromkeys(tokens(literal)))
    topical = [t for t in found if t not in STOPWORDS]
    return tuple(topical or found)


def _keep_path(literal: str) -> bool:
    """``and/or``, ``yes/no``, ``input/output`` are prose, not paths."""
    if literal.startswith(("/", "~", ".")) or "." in literal.rsplit("/", 1)[-1]:
        return True
    parts = [p for p in re.split(r"[/\\]", literal) if p]
    return not (len(parts) == 2 and all(p.isalpha() for p in parts))


def _literal_units(text: str) -> list[Unit]:
    units: list[Unit] = []
    for a in anchor_mod.extract(text):
        kind = a.kind
        if kind == "quoted":
            if a.start > 0 and text[a.start - 1] == "`":
                continue  # backticks are read below, with their own minimum length
            kind = "phrase"
        elif kind == "value" and not (
            a.value.startswith(("http://", "https://"))
            or (a.value.count(".") >= 2 and a.value.lstrip("v")[:1].isdigit())
        ):
            continue  # numbers with units, addresses: too generic to be topic evidence
        elif kind == "symbol" and fold(a.value).rstrip(".") in _NOT_SYMBOLS:
            continue
        if kind == "symbol" and a.value.endswith("()"):
            # A call names the symbol: search ``parseConfig``, which the index also holds alone.
            a = anchor_mod.Anchor(a.start, a.end - 2, a.value[:-2], kind)
        elif kind == "path" and not _keep_path(a.value):
            continue
        terms = (
            _phrase_terms(a.value)
            if kind == "phrase" or (kind == "error" and " " in a.value)
            else _identifier_terms(a.value)
        )
        if terms:
            units.append(Unit(kind, a.value, a.start, a.end, terms))
    for m in _BACKTICK.finditer(text):
        start, end = m.span(1)
        literal = m.group(1)
        if literal != literal.strip():
            continue
        if any(ch.isspace() for ch in literal):
            terms = _phrase_terms(literal)
            kind = "phrase"
        else:
            terms = _identifier_terms(literal)
            kind = "backtick"
        if terms:
            units.append(Unit(kind, literal, start, end, terms))
    # Drop an identifier nested in another identifier (``load_file`` in ``loader.load_file()``);
    # identifiers inside a quoted phrase stay (each is evidence on its own).
    units.sort(key=lambda u: (u.start, -(u.end - u.start)))
    kept: list[Unit] = []
    for u in units:
        if any(
            k.group == "identifier" and k.start <= u.start and u.end <= k.end and k is not u
            for k in kept
        ):
            continue
        if any(k.start == u.start and k.end == u.end for k in kept):
            continue
        kept.append(u)
    return kept


def _keyword_units(text: str, taken: list[tuple[int, int]]) -> list[Unit]:
    units: list[Unit] = []
    seen: set[str] = set()
    for term, start, end in tokens_with_offsets(text):
        if any(s < end and start < e for s, e in taken):
            continue
        span = text[start:end]
        cjk = _is_cjk(term)
        if cjk:
            if len(term) != 2:
                continue
        elif not _whole_word(text, start, end) or any(ch in _JOINERS for ch in span):
            continue  # compounds and identifier parts: their words come on their own
        if term in seen:
            continue
        if term in TECHNOLOGIES:
            kind = "technology"
        elif cjk:
            kind = "keyword"
        else:
            if term in STOPWORDS or len(term) < MIN_KEYWORD:
                continue
            if term.isdigit() and len(term) < 3:
                continue
            kind = "keyword"
        seen.add(term)
        units.append(Unit(kind, span, start, end, (term,)))
    return units


def extract(message: str) -> Query:
    """The topic units and historical cues of the latest real user message."""
    if not message or not message.strip():
        return Query(message, reason="empty")
    if is_host_generated(message):
        return Query(message, reason="host-generated")
    text = message[:MAX_MESSAGE_CHARS]
    literal = _literal_units(text)
    identifiers = [u for u in literal if u.group == "identifier"]
    identifiers = sorted(
        identifiers,
        key=lambda u: (anchor_mod.KINDS.get(u.kind, ("", 3))[1] if u.kind != "backtick" else 2,
                       -len(u.literal), u.start),
    )[:MAX_IDENTIFIERS]  # fmt: skip
    phrases = [u for u in literal if u.group == "phrase"][:MAX_PHRASES]
    chosen = sorted(identifiers + phrases, key=lambda u: u.start)
    spans = cue_spans(text)
    taken = [(u.start, u.end) for u in literal] + [(s, e) for s, e, _ in spans]
    keywords = _keyword_units(text, taken)[:MAX_KEYWORDS]
    # A keyword already searched as an identifier's or phrase's term adds nothing.
    covered = {t for u in chosen for t in u.terms}
    keywords = [k for k in keywords if k.terms[0] not in covered]
    units = tuple(chosen + keywords)
    found_cues = tuple(dict.fromkeys(c for _, _, c in spans))
    if not units:
        return Query(message, cues=found_cues, reason="no-topic")
    return Query(message, units, found_cues)
