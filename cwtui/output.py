"""Shared output conventions of the CLI: data to stdout, diagnostics to stderr, one-line errors.

Every command runs inside :func:`guard`: a :class:`~cwcore.errors.CwError` becomes one line on
stderr (or ``{"error": {"code", "message"}}`` on stdout under ``--json``) and the error's exit
code; an unexpected exception becomes one line too, never a traceback (set ``CW_DEBUG=1`` to see
it).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from cwcore.errors import CwError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def shown_id(value: str) -> str:
    """An id as Rich markup for people: ids are data, so a ``[`` is not markup and a control
    character (an escape sequence in a hostile log) is shown as ``\\xNN``, never sent to the
    terminal."""
    visible = "".join(
        f"\\x{ord(ch):02x}" if ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 else ch for ch in value
    )
    return escape(visible)


def emit_json(body: Any) -> None:
    """One JSON document on one line of stdout (flushed: consumers read it as it comes)."""
    sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def fail(code: str, message: str, exit_code: int, as_json: bool) -> typer.Exit:
    if as_json:
        emit_json({"error": {"code": code, "message": message}})
    else:
        err_console.print(f"cw: {message}", markup=False, soft_wrap=True)
    return typer.Exit(exit_code)


@contextmanager
def guard(as_json: bool = False) -> Iterator[None]:
    try:
        yield
    except CwError as exc:
        raise fail(exc.code, exc.message, exc.exit_code, as_json) from None
    except KeyboardInterrupt:
        raise fail("interrupted", "interrupted", 130, as_json) from None
    except typer.Exit:
        raise
    except BrokenPipeError:
        raise typer.Exit(0) from None
    except Exception as exc:  # the last line of defence: no traceback for users
        if os.environ.get("CW_DEBUG"):
            traceback.print_exc()
        raise fail("internal", f"internal error: {type(exc).__name__}: {exc}", 1, as_json) from None
