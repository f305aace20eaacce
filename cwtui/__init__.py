"""cw's faces: the Typer CLI (``cli.py``) and the Textual TUI (``app.py``)."""
