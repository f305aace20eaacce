"""Settings: the public option names and defaults, from ``CW_HOME/config.toml`` and ``CW_*``.

A setting has one camelCase name (the public one, e.g. ``semanticRetrieval``), used as the key in
``config.toml``; its environment variable is ``CW_`` plus the name in upper snake case
(``CW_SEMANTIC_RETRIEVAL``). The environment wins over the file, the file over the default.
Every duration the archive uses is a setting here, in the unit its name states.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.errors import InvalidInput, StoreError, excerpt


@dataclass(frozen=True)
class Settings:
    """Effective settings. Field names are snake_case; their public names are camelCase."""

    semantic_retrieval: bool = field(
        default=True, metadata={"doc": "Explicit search may use local embeddings."}
    )
    semantic_policy: str = field(
        default="auto",
        metadata={
            "doc": "Default semanticPolicy of explicit search: always|auto|never "
            "(chosen by make eval, docs/evaluation.md)."
        },
    )
    reranker_enabled: bool = field(
        default=True,
        metadata={"doc": "Rerank the lexical/semantic tier when a model is installed."},
    )
    reranker_model: str = field(
        default="Xenova/ms-marco-MiniLM-L-6-v2", metadata={"doc": "Cross-encoder model name."}
    )
    reranker_model_revision: str = field(
        default="",
        metadata={"doc": "Pinned model revision (empty: the content digest recorded at install)."},
    )
    reranker_model_cache_path: str = field(
        default="", metadata={"doc": "Reranker folder (default CW_HOME/models/reranker)."}
    )
    reranker_candidates: int = field(
        default=40, metadata={"doc": "Fused lexical/semantic candidates sent to the reranker."}
    )
    vector: int = field(
        default=30,
        metadata={"doc": "Semantic candidate windows explicit search takes per round (spec 004)."},
    )
    lexical: int = field(
        default=30,
        metadata={
            "doc": "Lexical (BM25) candidate windows explicit search takes per round; Markdown "
            "evidence units ranked (spec 004)."
        },
    )
    candidates: int = field(
        default=40,
        metadata={
            "doc": "Fused candidates (distinct sources) handed on to the reranker and the first "
            "page of explicit search (spec 004)."
        },
    )
    final: int = field(
        default=6,
        metadata={
            "doc": "Hits a Markdown evidence search returns when no limit is asked (spec 004; "
            "cw search keeps its --limit default of 10)."
        },
    )
    result: int = field(
        default=16_000,
        metadata={"doc": "Characters of all of one search result's excerpts together (spec 004)."},
    )
    per_hit: int = field(
        default=3_000, metadata={"doc": "Characters of one hit's excerpt (spec 004)."}
    )
    window_tokens: int = field(default=900, metadata={"doc": "Search window size in tokens."})
    window_overlap: float = field(
        default=0.15, metadata={"doc": "Search window overlap (fraction)."}
    )
    lease_minutes: float = field(default=30.0, metadata={"doc": "Locator lease length, minutes."})
    daemon_grace_seconds: float = field(
        default=300.0, metadata={"doc": "Daemon idle grace before it closes the store, seconds."}
    )
    hint_suppression_hours: float = field(
        default=24.0, metadata={"doc": "Exposure suppression of a revealed source, hours."}
    )
    tool_payload_max_age_days: float = field(
        default=7.0, metadata={"doc": "Oldest tool payload preflight may insert, days."}
    )
    conversation_max_age_days: float = field(
        default=30.0, metadata={"doc": "Oldest conversation preflight may insert, days."}
    )
    abandoned_hint_days: float = field(
        default=30.0,
        metadata={"doc": "Hint records of a session idle this long are reclaimed, days."},
    )
    memory_injection: bool = field(
        default=True,
        metadata={
            "doc": "The hooks add the memory block at session start and to each real prompt."
        },
    )
    hint_message_tokens: int = field(default=160, metadata={"doc": "Hint budget per user message."})
    max_retrieved_history_tokens: int = field(
        default=160,
        metadata={
            "doc": "Tokens of retrieved evidence per user message, the hint's whole block "
            "(spec 001 context.maxRetrievedHistoryTokens; the budget is the lower of this and "
            "hintMessageTokens)."
        },
    )
    hint_active_tokens: int = field(
        default=640, metadata={"doc": "Hint budget across active user-message keys."}
    )
    segment_bytes: int = field(
        default=8192,
        metadata={
            "doc": "Text bytes one stored document packs from consecutive messages of a turn; "
            "a larger message is a document of its own (a tool output: a tool-result document)."
        },
    )
    retention_session_days: float = field(
        default=0.0,
        metadata={
            "doc": "Expire agent sessions this many days after their last activity (0 keeps all)."
        },
    )
    retention_markdown_days: float = field(
        default=0.0,
        metadata={
            "doc": "Expire Markdown documents this many days after their import (0 keeps all)."
        },
    )
    scrub_secrets: bool = field(
        default=True, metadata={"doc": "Replace API keys, tokens and passwords at import."}
    )
    sync_projects: str = field(
        default="",
        metadata={
            "doc": "Project folders cw sync also reads (Aider's .aider.chat.history.md, Crush's "
            ".crush/crush.db), separated by the path separator (: or ;)."
        },
    )
    durable_sync: bool = field(
        default=False,
        metadata={
            "doc": "fsync the WAL on every admission (survives power loss, not only kill -9)."
        },
    )

    @property
    def hint_message_budget(self) -> int:
        """The per-message hint budget (tokens): the lower of ``hintMessageTokens`` (spec 000's
        per-message allowance) and ``maxRetrievedHistoryTokens`` (spec 001's evidence-set
        limit) — one message's evidence set is its one hint, so both bound the same bytes."""
        return min(self.hint_message_tokens, self.max_retrieved_history_tokens)


def camel(name: str) -> str:
    """``semantic_retrieval`` -> ``semanticRetrieval``."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def env_name(name: str) -> str:
    """``semanticRetrieval`` or ``semantic_retrieval`` -> ``CW_SEMANTIC_RETRIEVAL``."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return "CW_" + snake.upper()


def default_home() -> Path:
    """``CW_HOME`` when set, else the platform's user data directory for ``cw``."""
    configured = os.environ.get("CW_HOME")
    if configured:
        return Path(configured).expanduser()
    # Imported here: most calls name CW_HOME, and the lean CLI path starts faster without it.
    import platformdirs

    return Path(platformdirs.user_data_dir("cw", appauthor=False))


def check_home(home: Path) -> None:
    """Raise :class:`~cwcore.errors.StoreError` unless ``home`` is a directory or can be created
    as one: a ``CW_HOME`` naming a file (or a path under one) is said in plain words, before
    anything tries to create the store there."""
    label = "CW_HOME" if os.environ.get("CW_HOME") else "the store directory"
    if home.exists() and not home.is_dir():
        raise StoreError(f"{label} {home} is not a directory")
    for parent in home.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(f"{label} {home} cannot be created: {parent} is not a directory")
            return


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(name: str, kind: Any, raw: Any) -> Any:
    try:
        if kind is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(text)
        if kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(raw)
            return int(raw.strip() if isinstance(raw, str) else raw)
        if kind is float:
            if isinstance(raw, bool):
                raise ValueError(raw)
            return float(raw)
        return str(raw)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"setting {name}: cannot read {excerpt(raw)} as {kind.__name__}"
        ) from None


#: The valid range of every numeric setting, inclusive: public name -> (lowest, highest). A value
#: outside it (or NaN, or an infinity) in config.toml or a ``CW_*`` variable is ``invalid-input``
#: naming the setting, the value, where it came from and this range. A new numeric setting must
#: get a row here (``tests/faults/test_setting_ranges.py`` checks that every one has).
RANGES: dict[str, tuple[float, float]] = {
    "rerankerCandidates": (1, 1000),
    "vector": (1, 1_000),
    "lexical": (1, 1_000),
    "candidates": (1, 1_000),
    "final": (1, 20),  # a tool result holds at most 20 hits
    "result": (1, 64_000),  # a tool result holds at most 64,000 characters
    "perHit": (1, 64_000),
    "windowTokens": (16, 16_000),
    "windowOverlap": (0.0, 0.9),
    "leaseMinutes": (1.0, 10_080.0),  # a minute to a week
    "daemonGraceSeconds": (1.0, 86_400.0),
    "hintSuppressionHours": (0.0, 8_760.0),
    "toolPayloadMaxAgeDays": (0.0, 3_650.0),
    "conversationMaxAgeDays": (0.0, 3_650.0),
    "abandonedHintDays": (1.0, 3_650.0),
    "hintMessageTokens": (0, 8_192),
    "maxRetrievedHistoryTokens": (0, 8_192),
    "hintActiveTokens": (0, 65_536),
    "segmentBytes": (1_024, 1_048_576),
    "retentionSessionDays": (0.0, 36_500.0),  # 0 keeps all
    "retentionMarkdownDays": (0.0, 36_500.0),  # 0 keeps all
}


def _number(value: float) -> str:
    """``5.0`` -> ``5``, ``0.15`` -> ``0.15``, ``10080`` -> ``10,080``: as people write it."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else repr(value)


def check_range(name: str, value: Any, source: str) -> None:
    """Raise :class:`InvalidInput` unless the numeric setting ``name`` is within its range."""
    bounds = RANGES.get(name)
    if bounds is None or isinstance(value, bool) or not isinstance(value, int | float):
        return
    low, high = bounds
    if not (math.isfinite(value) and low <= value <= high):
        raise InvalidInput(
            f"setting {name} = {excerpt(_number(value))[1:-1]} (from {source}) is out of range: "
            f"{_number(low)} to {_number(high)}"
        )


@dataclass(frozen=True)
class SettingValue:
    """One effective setting for ``cw config``: public name, value, and where it came from."""

    name: str
    value: Any
    source: str  # "default", "config.toml" or the environment variable's name
    doc: str


#: Settings a spec names inside a table: in config.toml, ``[context]
#: maxRetrievedHistoryTokens = 160`` (or the dotted key ``context.maxRetrievedHistoryTokens``)
#: is the setting ``maxRetrievedHistoryTokens``.
TABLES: dict[str, tuple[str, ...]] = {"context": ("maxRetrievedHistoryTokens",)}


def _untabled(values: dict[str, Any], path: Path) -> dict[str, Any]:
    """``values`` with the spec's tables (:data:`TABLES`) lifted to their settings' names."""
    out = dict(values)
    for table, names in TABLES.items():
        if table not in out or not isinstance(out[table], dict):
            continue
        inner = out.pop(table)
        for name, value in inner.items():
            if name not in names:
                raise InvalidInput(f"{path}: unknown setting(s): {table}.{excerpt(name)[1:-1]}")
            if name in out:
                raise InvalidInput(f"{path}: {name} is set twice (as {table}.{name} too)")
            out[name] = value
    return out


def load(home: Path) -> tuple[Settings, list[SettingValue]]:
    """Read the effective settings for a store home. Unknown keys in config.toml are an error."""
    file_values: dict[str, Any] = {}
    path = home / "config.toml"
    if path.exists():
        try:
            file_values = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{path}: {exc}") from None
    file_values = _untabled(file_values, path)
    fields = {camel(f.name): f for f in dataclasses.fields(Settings)}
    unknown = sorted(set(file_values) - set(fields))
    if unknown:
        raise InvalidInput(f"{path}: unknown setting(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    report: list[SettingValue] = []
    for public, f in fields.items():
        kind = type(f.default)
        source = "default"
        value = f.default
        if public in file_values:
            value, source = _coerce(public, kind, file_values[public]), "config.toml"
        env = env_name(public)
        if env in os.environ:
            value, source = _coerce(public, kind, os.environ[env]), env
        check_range(public, value, source)
        values[f.name] = value
        report.append(SettingValue(public, value, source, f.metadata.get("doc", "")))
    settings = Settings(**values)
    if settings.semantic_policy not in ("auto", "always", "never"):
        raise InvalidInput("setting semanticPolicy must be auto, always or never")
    return settings, report


#: The name :func:`fingerprint` gives the engine's clock (``CW_NOW``; unset: the system clock).
NOW = "now"


def fingerprint(settings: Settings) -> dict[str, str]:
    """What a client and the daemon compare to tell whether the daemon runs with the settings
    the client would use: a short digest of each setting's effective value (every setting here
    is applied by the daemon; client-only variables such as ``CW_EMBEDDED`` or ``CW_PROJECT``
    are not settings) and of :data:`NOW`, the fixed clock ``CW_NOW``. Digests, not values, go
    on the wire."""

    def digest(value: Any) -> str:
        raw = json.dumps(value, sort_keys=True).encode("utf-8")
        return hashlib.blake2b(raw, digest_size=6).hexdigest()

    out = {camel(f.name): digest(getattr(settings, f.name)) for f in dataclasses.fields(settings)}
    out[NOW] = digest(os.environ.get("CW_NOW") or None)
    return out


def differing(client: dict[str, str], daemon: dict[str, str]) -> list[str]:
    """Names both fingerprints know whose digests differ, sorted (a setting only one side
    knows comes from another cw version and is not reported)."""
    return sorted(name for name in client.keys() & daemon.keys() if client[name] != daemon[name])
