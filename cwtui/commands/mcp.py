"""``cw mcp``: serve the archive of one project to an agent host over MCP (stdio)."""

from __future__ import annotations

from typing import Annotated

import typer

from cwtui.output import guard


def mcp(
    project: Annotated[
        str | None,
        typer.Option(help="The project the tools may reach (default: $CW_PROJECT; required)."),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            help="Bind scope `session` to this session and its lineage (default: $CW_SESSION)."
        ),
    ] = None,
) -> None:
    """Run the MCP server on stdin/stdout for an agent host (Claude Code, Codex, ...).

    Tools: context_window_search, context_window_gather, context_window_recall and
    context_window_supersede, none of which reaches beyond the bound project. See docs/hosts.md.
    """
    with guard():
        from cwcore.hosts import mcp_server  # the mcp SDK loads only for this command

        mcp_server.serve(project, session)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
