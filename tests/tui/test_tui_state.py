"""The TUI state file (``CW_HOME/tui-state.json``, :mod:`cwtui.tui_state`): any string round-trips
and the file stays valid JSON; a corrupt file is moved aside and reported once, never a crash;
writes are whole (temporary file, then ``os.replace``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwtui import tui_state
from cwtui.tui_state import SavedSearch, SearchView, TuiState

#: Every code point, lone surrogates and NUL included (Hypothesis leaves surrogates out unless
#: asked): a paste can carry them into the query bar.
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)

VIEWS = st.builds(
    SearchView,
    query=ANY_TEXT,
    filters=ANY_TEXT,
    scope=ANY_TEXT,
    project=st.none() | ANY_TEXT,
    session=st.none() | ANY_TEXT,
    policy=st.none() | ANY_TEXT,
    relation=st.none() | ANY_TEXT,
    context=st.integers(-(2**70), 2**70),
    density=st.integers(-5, 5),
    order=ANY_TEXT,
)


@st.composite
def states(draw: st.DrawFn) -> TuiState:
    state = TuiState(last=draw(st.none() | VIEWS))
    for slot in draw(st.sets(st.sampled_from(tui_state.SLOTS), max_size=4)):
        state = state.with_saved(SavedSearch(slot, draw(ANY_TEXT), draw(VIEWS)))
    return state


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=states())
def test_any_state_round_trips_and_the_file_is_valid_json(tmp_path: Path, state: TuiState) -> None:
    folder = tmp_path / "state"
    folder.mkdir(exist_ok=True)
    path = folder / tui_state.FILE_NAME
    tui_state.save(path, state)
    data = path.read_bytes()
    assert data.isascii()  # so valid UTF-8 whatever the strings held
    assert isinstance(json.loads(data.decode("ascii")), dict)
    loaded = tui_state.load(path)
    assert loaded.problem is None
    assert loaded.state == state
    assert [p.name for p in folder.iterdir()] == [tui_state.FILE_NAME]  # no temporary left


def test_a_missing_file_is_the_empty_state(tmp_path: Path) -> None:
    assert tui_state.load(tmp_path / "tui-state.json") == tui_state.Loaded(TuiState())


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b"\xff\xfe{}",
        b"[]",
        b'{"version": 99, "last": null, "saved": []}',
        b'{"version": 1, "last": {"query": 5}, "saved": []}',
        b'{"version": 1, "last": {"context": true}, "saved": []}',
        b'{"version": 1, "last": {"colour": "red"}, "saved": []}',
        b'{"version": 1, "last": null, "saved": {}}',
        b'{"version": 1, "last": null, "saved": [{"slot": 10, "name": "x", "view": {}}]}',
        b'{"version": 1, "saved": [{"slot": 1, "name": "a", "view": {}},'
        b' {"slot": 1, "name": "b", "view": {}}]}',
        b"[" * 100_000,
    ],
)
def test_a_corrupt_file_is_moved_aside_and_reported_once(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "tui-state.json"
    path.write_bytes(content)
    first = tui_state.load(path)
    assert first.state == TuiState()
    assert first.problem is not None and "tui-state.json.corrupt" in first.problem
    assert (tmp_path / "tui-state.json.corrupt").read_bytes() == content  # not lost
    assert not path.exists()
    assert tui_state.load(path).problem is None  # once


def test_update_keeps_the_slots_another_run_saved(tmp_path: Path) -> None:
    """Read-modify-write: the last search written at exit leaves another TUI's slots alone."""
    path = tmp_path / "tui-state.json"
    other = SavedSearch(3, "queue", SearchView(query="queue backend", filters="project:delta"))
    tui_state.save(path, TuiState().with_saved(other))
    mine = SearchView(query="socket", relation="question")
    written = tui_state.update(path, lambda state: state.with_last(mine))
    assert written.state == TuiState(last=mine, saved=(other,))
    assert tui_state.load(path).state == written.state


def test_a_failed_write_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state" / "tui-state.json"
    path.parent.mkdir()
    old = TuiState(last=SearchView(query="old"))
    tui_state.save(path, old)

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        tui_state.save(path, TuiState(last=SearchView(query="new")))
    monkeypatch.undo()
    assert tui_state.load(path).state == old
    assert [p.name for p in path.parent.iterdir()] == ["tui-state.json"]  # no temporary left


def test_slots_replace_and_empty() -> None:
    a, b = SavedSearch(2, "a", SearchView(query="a")), SavedSearch(1, "b", SearchView())
    state = TuiState().with_saved(a).with_saved(b)
    assert [s.slot for s in state.saved] == [1, 2]
    again = state.with_saved(SavedSearch(2, "a2", SearchView(query="a2")))
    assert again.slot(2) is not None and again.slot(2).name == "a2"  # type: ignore[union-attr]
    assert again.without_slot(2).slot(2) is None
