"""``python -m bench.scale_search`` (the scale bench's searches on a kept archive) on a tiny
stand-in of the shared data: every timed pass has every system and mode, the daemon it starts is
stopped, and bad arguments are one line. Numbers are not checked (timing under load proves
nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scale_search
from cwcore.daemon import control
from tests.test_bench_lexical_cpu import stand_in_home
from tests.test_bench_semantic_graph import embedded_stand_in_home

COPIES = 2


def _result(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "results" / f"scale-search-{COPIES}.json").read_text())


def _exited(pid: int) -> bool:
    """The process is gone, or has exited and waits to be reaped (the test started it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_lexical_passes_on_a_kept_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = stand_in_home(tmp_path, monkeypatch, COPIES)
    assert scale_search.main([str(home), "--copies", str(COPIES), "--rounds", "2"]) == 0
    result = _result(tmp_path)
    assert result["label"] == "real text repeated ×2, synthetic ids" and not result["semantic"]
    assert len(result["passes"]) == 2
    for p in result["passes"]:
        assert set(p["timings"]) == {
            f"{system}/{mode}"
            for system in ("cw-lexical-daemon", "fts5")
            for mode in ("all", "haystack")
        }
        assert set(p["ratios"]) == {"cw-lexical-daemon/all", "cw-lexical-daemon/haystack"}
    assert result["memory_mb"]["VmRSS"] > 0
    assert _exited(result["daemon_pid"])  # the daemon it started was stopped
    assert "pass 2 cw-lexical-daemon/all" in capsys.readouterr().out


@pytest.mark.slow
def test_default_search_passes_on_an_embedded_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = embedded_stand_in_home(tmp_path, monkeypatch, COPIES)
    assert scale_search.main([str(home), "--copies", str(COPIES), "--semantic"]) == 0
    result = _result(tmp_path)
    (only,) = result["passes"]
    assert {"cw-default-daemon/all", "cw-default-daemon/haystack"} <= set(only["timings"])
    assert "cw-default-daemon" in result["semantic_search_used"]
    assert result["vectors"]["rows"] > 0 and result["vectors"]["graph_rows"] == 0  # small


def test_semantic_on_an_archive_not_embedded_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = stand_in_home(tmp_path, monkeypatch, COPIES)
    monkeypatch.setattr(scale_search, "write_result", _no_result)
    stopped: list[Path] = []
    real_stop = control.stop
    monkeypatch.setattr(control, "stop", lambda h: stopped.append(h) or real_stop(h))
    with pytest.raises(RuntimeError, match="not embedded"):
        scale_search.run(home, COPIES, semantic=True)
    assert stopped == [home]  # the daemon it started is stopped all the same
    assert scale_search.main([str(home), "--copies", str(COPIES), "--semantic"]) == 1
    # its own one line last (the daemon may note first that it tightened a folder's mode)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("scale_search: ") and "not embedded" in last


def _no_result(name: str, out: dict) -> Path:
    raise AssertionError("a refused run wrote a result")


@pytest.mark.parametrize(
    "argv",
    [[], ["a", "b"], ["home", "--copies"], ["home", "--copies", "0"], ["home", "--rounds", "x"]],
)
def test_bad_arguments_print_the_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert scale_search.main(argv) == 2
    assert "usage: python -m bench.scale_search" in capsys.readouterr().err


def test_a_folder_without_an_archive_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert scale_search.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds no archive" in err and err.strip().count("\n") == 0
