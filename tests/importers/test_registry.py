"""The registry is the one list of formats: detection order, ``--format`` choices, sync
locations and the docs' format table all come from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwcore.importers import base, catalog, sync
from cwtui.cli import app

DOCS = Path(__file__).resolve().parents[2] / "docs" / "importers.md"


def test_docs_list_every_registered_format_with_its_locations() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert catalog.BEGIN + "\n" + catalog.table() + catalog.END in text
    for importer in base.importers():
        row = next(r for r in text.splitlines() if r.startswith(f"| `{importer.name}` |"))
        for location in importer.locations:
            assert location.label() in row
    names = {i.name for i in base.importers()}
    assert names == set(base.formats())


def test_import_help_lists_every_format() -> None:
    result = CliRunner().invoke(app, ["import", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    for name in base.formats():
        assert name in flat


def test_detection_follows_priority_and_permissive_formats_come_last() -> None:
    order = [i.name for i in base.importers()]
    assert order[-2:] == ["markdown", "cw-jsonl"]
    assert order.index("claude-code") < order.index("pi")


def test_locations_resolve_under_a_fake_home(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_DATA_HOME", "/elsewhere")
    rows = sync.locations(home=tmp_path)
    assert rows and all(str(root).startswith(str(tmp_path)) for _, _, root in rows)
    xdg = base.Location("$XDG_DATA_HOME/tool", ("x.db",))
    assert xdg.resolve(tmp_path) == tmp_path / ".local/share/tool"
    assert xdg.resolve() == Path("/elsewhere/tool")
    assert base.Location("~/.tool").resolve(tmp_path) == tmp_path / ".tool"
    assert not base.Location("~/x", platforms=("nowhere",)).applies()


def test_a_forced_sqlite_format_must_match_the_schema(archive) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from cwcore.errors import UnknownFormat
    from tests.importers.golden_support import FIXTURES

    with pytest.raises(UnknownFormat, match="looks like opencode"):
        archive.import_paths([FIXTURES / "opencode" / "opencode.db"], fmt="goose")
    assert archive.sessions(limit=5)[0] == []
    summary = archive.import_paths([FIXTURES / "goose" / "sessions.db"], fmt="goose")
    assert summary.sessions == 1 and summary.errors == []


def test_every_importer_module_of_the_package_is_listed() -> None:
    """The registry loads the modules it lists, not whatever the package holds: a module that
    registers an importer but is missing from the list would be silently unusable."""
    import importlib
    import pkgutil

    import cwcore.importers as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"cwcore.importers.{info.name}")  # every module, listed or not
    registering = {type(importer).__module__ for importer in base.importers()}
    listed = {f"cwcore.importers.{name}" for name in base.IMPORTER_MODULES}
    assert registering == listed
    assert len(base.IMPORTER_MODULES) == len(set(base.IMPORTER_MODULES))


def test_concurrent_first_use_never_sees_a_half_filled_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Imports right after the daemon starts run on several threads at once: each must see
    every format (issue 32: 10 of 80 concurrent imports failed with `unknown format`)."""
    import threading
    import time

    saved = dict(base._REGISTRY)
    by_module: dict[str, list[base.Importer]] = {}
    for importer in saved.values():
        by_module.setdefault(type(importer).__module__, []).append(importer)

    def slow_import(name: str) -> None:
        time.sleep(0.002)  # widens the window a thread could look in while others load
        for importer in by_module.get(name, []):
            base.register(importer)

    monkeypatch.setattr(base, "_loaded", False)
    monkeypatch.setattr(base, "_REGISTRY", {})
    monkeypatch.setattr(base.importlib, "import_module", slow_import)
    errors: list[BaseException] = []

    def use() -> None:
        try:
            assert base.get("codex").name == "codex"
            assert set(base.formats()) == set(saved)
        except BaseException as exc:  # collected: an assert in a thread would be lost
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
