"""The TUI's own state across runs: saved searches and the last search (``CW_HOME/tui-state.json``).

A face concern (what the Search screen showed, not what the archive holds), so it lives in
:mod:`cwtui` and never goes through the store or the daemon. The file is small JSON::

    {"version": 1,
     "last": {"query": "…", "filters": "…", "scope": "all", …},
     "saved": [{"slot": 1, "name": "…", "view": {…}}, …]}

Contracts:

* **Written whole, atomically**: a temporary file in the same directory, then ``os.replace``, so a
  reader sees the old file or the new one, never half of one. No fsync: a file cut short by a
  power loss reads as corrupt, which is handled below, and an fsync on the event loop of a loaded
  machine can stall the UI for longer than the write is worth.
* **Any string round-trips**: the JSON is written ASCII-only (``\\u`` escapes), so NULs, control
  characters and even lone surrogates (which a paste can carry) reload equal and the file's bytes
  are always valid UTF-8 and valid JSON.
* **Read tolerantly**: a missing file is the empty state. A file that is not this format (not
  JSON, a wrong type anywhere, another version) is never a crash and never lost silently: it is
  moved aside to ``tui-state.json.corrupt`` and :attr:`Loaded.problem` says so once (the next
  read finds no file). Values of the right type that the screen does not know (a scope it no
  longer has) are the screen's to ignore, field by field.
* **Read-modify-write** (:func:`update`): a save re-reads the file first, so two TUIs running at
  once lose only a change to the same field, not each other's slots.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cwcore import config

FILE_NAME = "tui-state.json"
#: Where an unreadable state file is moved (replacing an older one there).
CORRUPT_SUFFIX = ".corrupt"
VERSION = 1
#: The saved-search slots, numbered as the keys that pick them.
SLOTS = tuple(range(1, 10))


@dataclass(frozen=True)
class SearchView:
    """What the Search screen searches with and how it shows it; every field as the screen
    keeps it (the values are the screen's to check)."""

    #: The query bar's text, inline filters included.
    query: str = ""
    #: The standing filters (F5), in the inline syntax.
    filters: str = ""
    #: F2: ``all``, ``project`` or ``session``, pinned to :attr:`project` / :attr:`session`.
    scope: str = "all"
    project: str | None = None
    session: str | None = None
    #: F3, or None for the ``semanticPolicy`` setting (so a changed setting still applies).
    policy: str | None = None
    #: F4 (None: any relation).
    relation: str | None = None
    #: F6: neighbouring turns on each side (0: a plain search).
    context: int = 0
    #: F7: snippet lines per result row.
    density: int = 2
    #: F8: display order of the fetched results.
    order: str = "relevance"


@dataclass(frozen=True)
class SavedSearch:
    """One saved search: its slot (1–9), the name it is listed under, the search."""

    slot: int
    name: str
    view: SearchView


@dataclass(frozen=True)
class TuiState:
    """Everything the file holds: the last search (None: none recorded) and the saved ones,
    ordered by slot, at most one per slot."""

    last: SearchView | None = None
    saved: tuple[SavedSearch, ...] = field(default=())

    def slot(self, number: int) -> SavedSearch | None:
        """The search saved in slot ``number``, if any."""
        return next((s for s in self.saved if s.slot == number), None)

    def with_saved(self, saved: SavedSearch) -> TuiState:
        """This state with ``saved`` in its slot (replacing what was there)."""
        others = [s for s in self.saved if s.slot != saved.slot]
        return replace(self, saved=tuple(sorted([*others, saved], key=lambda s: s.slot)))

    def without_slot(self, number: int) -> TuiState:
        """This state with slot ``number`` empty."""
        return replace(self, saved=tuple(s for s in self.saved if s.slot != number))

    def with_last(self, view: SearchView) -> TuiState:
        return replace(self, last=view)


@dataclass(frozen=True)
class Loaded:
    """A read's outcome: the state, and ``problem`` — one sentence for a person — when the
    file was unreadable and moved aside (the state is then empty)."""

    state: TuiState
    problem: str | None = None


class Malformed(ValueError):
    """The file's content is not this format (the message says where)."""


def state_path(home: Path | None = None) -> Path:
    """The state file of the store home ``home`` (default: ``CW_HOME``)."""
    return (home if home is not None else config.default_home()) / FILE_NAME


def encode(state: TuiState) -> str:
    """The file's text for ``state`` (ASCII-only JSON, keys sorted: equal states, equal bytes)."""
    body: dict[str, Any] = {
        "version": VERSION,
        "last": asdict(state.last) if state.last is not None else None,
        "saved": [asdict(s) for s in state.saved],
    }
    return json.dumps(body, ensure_ascii=True, sort_keys=True, indent=1) + "\n"


def decode(text: str) -> TuiState:
    """The state in ``text``; raises :class:`Malformed` for anything that is not this format."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to read
        raise Malformed(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(body, dict):
        raise Malformed("not a JSON object")
    if body.get("version") != VERSION:
        raise Malformed(f"version {body.get('version')!r}, this cw reads {VERSION}")
    last = body.get("last")
    saved = body.get("saved", [])
    if not isinstance(saved, list):
        raise Malformed("saved is not a list")
    state = TuiState(last=None if last is None else _view(last, "last"))
    for n, item in enumerate(saved):
        where = f"saved[{n}]"
        if not isinstance(item, dict) or set(item) != {"slot", "name", "view"}:
            raise Malformed(f"{where} is not a saved search")
        slot, name = item["slot"], item["name"]
        if type(slot) is not int or slot not in SLOTS or not isinstance(name, str):
            raise Malformed(f"{where} has a bad slot or name")
        if state.slot(slot) is not None:
            raise Malformed(f"{where}: slot {slot} twice")
        state = state.with_saved(SavedSearch(slot, name, _view(item["view"], where)))
    return state


#: Each view field's accepted JSON types (``bool`` is excluded from ``int`` below).
_TYPES: dict[str, tuple[type, ...]] = {
    "query": (str,),
    "filters": (str,),
    "scope": (str,),
    "project": (str, type(None)),
    "session": (str, type(None)),
    "policy": (str, type(None)),
    "relation": (str, type(None)),
    "context": (int,),
    "density": (int,),
    "order": (str,),
}


def _view(raw: object, where: str) -> SearchView:
    if not isinstance(raw, dict):
        raise Malformed(f"{where} is not an object")
    known = {f.name for f in fields(SearchView)}
    unknown = set(raw) - known
    if unknown:
        raise Malformed(f"{where} has unknown fields {sorted(unknown)}")
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, _TYPES[name]):
            raise Malformed(f"{where}.{name} has the wrong type")
    return SearchView(**raw)


def load(path: Path) -> Loaded:
    """Read the state at ``path``: a missing file is the empty state; an unreadable one is moved
    aside (``….corrupt``) and reported in :attr:`Loaded.problem`, never raised."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Loaded(TuiState())
    except OSError as exc:
        return Loaded(TuiState(), f"Could not read {path}: {exc.strerror or exc}.")
    try:
        return Loaded(decode(data.decode("utf-8")))
    except (UnicodeDecodeError, Malformed) as exc:
        reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
        aside = path.with_name(path.name + CORRUPT_SUFFIX)
        try:
            os.replace(path, aside)
        except OSError as move:
            return Loaded(
                TuiState(),
                f"{path} is unreadable ({reason}) and could not be moved aside: "
                f"{move.strerror or move}; saved searches start empty.",
            )
        return Loaded(
            TuiState(),
            f"{path.name} was unreadable ({reason}): moved to {aside.name}; "
            "saved searches start empty.",
        )


def save(path: Path, state: TuiState) -> None:
    """Write ``state`` to ``path`` atomically (temporary file, then ``os.replace``). Raises
    :class:`OSError` when the directory is not writable; ``path`` is then unchanged."""
    text = encode(state)
    fd, temp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def update(path: Path, change: Callable[[TuiState], TuiState]) -> Loaded:
    """Re-read the file, apply ``change`` and write the result; returns the state written and
    any problem the read met (the file moved aside). Raises :class:`OSError` from the write."""
    loaded = load(path)
    state = change(loaded.state)
    save(path, state)
    return Loaded(state, loaded.problem)
