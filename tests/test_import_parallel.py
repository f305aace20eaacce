"""Large imports read in a second process (:mod:`cwcore.importers.prepared`): the child reads,
scrubs and cuts the files into documents, this process admits. Whatever reads them, an import
stores the same records and reports the same summary; a child that dies costs its file one error
line and the other files still import; a cancelled import stops the child."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cwcore.config import Settings
from cwcore.importers import pipeline, prepared
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store
from tests.importers.golden_support import FIXTURES
from tests.test_import_memory import _random_file, _snapshot


def _corpus(folder: Path) -> Path:
    """Every importer's fixtures (files written by other tools and by hand), a few generated
    cw-jsonl logs with branches, bad and duplicate lines, a lone surrogate and a secret."""
    shutil.copytree(FIXTURES, folder)
    for seed in range(3):
        _random_file(folder / f"generated-{seed}.cw.jsonl", seed)
    rows = [
        '{"session": "odd", "id": "u1", "role": "user", "text": "cut \\ud83d here"}',
        "{not json",
        json.dumps(
            {"session": "odd", "id": "a1", "role": "assistant", "text": "key AKIAIOSFODNN7EXAMPLE"}
        ),
    ]
    (folder / "odd.cw.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    # Two agents' sessions with one id, and a session's later turns under another project: the
    # documents the reader cut under the native identity are cut again under the stored one.
    for name, agent, project in (("x1", "codex", "p1"), ("x2", "pi", "p1"), ("x3", "pi", "p2")):
        row = {"session": "shared", "id": f"u-{name}", "role": "user", "text": f"turn {name}"}
        row |= {"agent": agent, "project": project}
        (folder / f"{name}.cw.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    return folder


def _logs(folder: Path, files: int) -> Path:
    """``files`` generated cw-jsonl logs (``log-<seed>.cw.jsonl``, sessions ``s<seed>-…``)."""
    folder.mkdir()
    for seed in range(files):
        _random_file(folder / f"log-{seed}.cw.jsonl", seed)
    return folder


def _spawned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The child processes the reading side starts from now on (their ``Popen`` objects)."""
    children: list[Any] = []
    spawn = prepared.subprocess.Popen

    def kept(*args: Any, **kwargs: Any) -> Any:
        child = spawn(*args, **kwargs)
        children.append(child)
        return child

    monkeypatch.setattr(prepared.subprocess, "Popen", kept)
    return children


def _run(store_path: Path, folder: Path, **kwargs: Any) -> tuple[dict[str, Any], Any]:
    store = Store(store_path)
    try:
        summary = pipeline.import_paths(Admission(store), [folder], settings=Settings(), **kwargs)
        return summary.to_json(), _snapshot(store)
    finally:
        store.close()


def test_the_child_process_stores_what_this_process_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _corpus(tmp_path / "logs")
    monkeypatch.setattr(prepared, "PARALLEL_MIN_BYTES", 1 << 62)
    admit = pipeline.admit_parsed
    with monkeypatch.context() as patch:
        # The oracle: every session cut into documents here, after its stored identity and
        # project are known, as before the reading moved out (the cut it was handed dropped).
        patch.setattr(pipeline, "admit_parsed", lambda *a, documents=None, **k: admit(*a, **k))
        here_summary, here = _run(tmp_path / "here", folder)
    monkeypatch.setattr(prepared, "PARALLEL_MIN_BYTES", 0)
    children = _spawned(monkeypatch)
    child_summary, child = _run(tmp_path / "child", folder)
    assert len(children) == 1  # the whole folder read by one child
    monkeypatch.setattr(prepared, "PARALLEL_MIN_BYTES", 1 << 62)
    assert _run(tmp_path / "in-process", folder) == (here_summary, here)
    assert here["counts"]["sessions"] > 20 and here_summary["imported"] > 50
    assert child == here
    assert child_summary == here_summary
    assert any("lone surrogate" in n for n in here_summary["notices"])
    assert any(e["line"] == 2 for e in here_summary["errors"])
    assert {"shared", "pi:shared"} <= set(here["sessions"])
    assert any("belongs to project p1" in n for n in here_summary["notices"])


def test_a_child_that_dies_costs_its_file_one_error_and_the_rest_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _logs(tmp_path / "logs", 3)
    monkeypatch.setattr(prepared, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(prepared, "_CHILD", "import sys; print('boom', file=sys.stderr); exit(3)")
    summary, snapshot = _run(tmp_path / "store", folder)
    (error,) = [e for e in summary["errors"] if e["path"].endswith("log-0.cw.jsonl")]
    assert error["reason"] == "cannot import: the reading process ended (exit 3): boom"
    # The files after it were read here: their own bad lines are reported as usual.
    assert any(e["path"].endswith("log-2.cw.jsonl") and e["line"] for e in summary["errors"])
    assert summary["files"] == 3
    sessions = {s.get("nativeId", s["id"]) for s in snapshot["sessions"].values()}
    assert sessions and not any(s.startswith("s0-") for s in sessions)
    assert any(s.startswith("s1-") for s in sessions) and any(s.startswith("s2-") for s in sessions)


def test_a_cancelled_import_stops_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _logs(tmp_path / "logs", 4)
    monkeypatch.setattr(prepared, "PARALLEL_MIN_BYTES", 0)
    children = _spawned(monkeypatch)
    acks: list[dict[str, Any]] = []

    def emit(event: dict[str, Any]) -> None:
        if event["type"] == "ack":
            acks.append(event)

    summary, _ = _run(tmp_path / "store", folder, emit=emit, cancelled=lambda: len(acks) >= 1)
    assert len(acks) >= 1 and summary["files"] == 1
    (child,) = children
    assert child.poll() is not None  # stopped and reaped, not left reading
