"""Sub-command groups of the ``cw`` CLI (each module exposes a Typer ``app``)."""
