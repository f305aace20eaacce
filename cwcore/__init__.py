"""cw's engine: the archive, its indexes, retrieval, recall, hints and memory.

This package never imports a terminal library (typer, textual, rich) or ``cwtui``;
``tests/test_boundary.py`` enforces it.
"""

__version__ = "0.1.0"
