"""Shared output conventions of the CLI: data to stdout, diagnostics to stderr, one-line errors.

Every command runs inside :func:`guard`: a :class:`~cwcore.errors.CwError` becomes one line on
stderr (or ``{"error": {"code", "message"}}`` on stdout under ``--json``) and the error's exit
code; an unexpected exception becomes one line too, never a traceback (set ``CW_DEBUG=1`` to see
it). :class:`CwGroup`, the root command's class, does the same for what fails before a command
runs: a bad option, a missing argument or an unknown command is ``invalid-input`` (exit 2), in one
line, instead of Typer's framed usage box.

A reader that closes the pipe early (``cw show S | head -1``) is not an error: the command stops
writing and exits 0, quietly, with or without ``--json``. Rich's own broken-pipe handling would
exit 1; :class:`CwConsole` hands the ``BrokenPipeError`` to :func:`guard` instead, and stdout is
pointed at ``/dev/null`` so the interpreter's final flush has nowhere to fail (Python's documented
idiom for SIGPIPE).
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text

# Typer bundles its own copy of click; its usage errors come from there, not from ``click``.
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from cwcore.contract.methods import Answer, answer_json
from cwcore.errors import CwError, InvalidInput


def silence_stdout() -> None:
    """After EPIPE: send what is left of stdout to ``/dev/null``, so neither a later write nor
    the interpreter's flush at exit raises (and prints "Exception ignored ...")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


#: What never reaches a terminal raw: C0 controls but newline and tab, DEL, C1 controls (0x9b is
#: a one-byte CSI to some terminals) and lone surrogates (not encodable: a write would fail).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
#: The same for one value on one line (ids, paths, names): newline and tab are escaped too.
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str, *, one_line: bool = False) -> str:
    """``text`` as it may reach a terminal: every control character (ESC, CR, BEL, …), DEL, C1
    control and lone surrogate shown escaped (``\\x1b``, ``\\udc00``); newline and tab kept
    unless ``one_line``. Every console of the CLI applies it to all the text it writes (see
    :class:`CwConsole`); writes that bypass the consoles call it themselves."""
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escaped, text)


def safe_text(text: Text) -> Text:
    """A styled ``text`` with every character :func:`safe` escapes shown escaped, each keeping
    the styles it had: for text styled by character offsets into the raw data (a match, the
    terms of a query), which escaping the string first would shift."""
    cuts = [at for m in _UNSAFE.finditer(text.plain) for at in (m.start(), m.end())]
    if not cuts:
        return text
    out = text.blank_copy()
    for piece in text.divide(cuts):
        if _UNSAFE.fullmatch(piece.plain):
            shown = Text(safe(piece.plain), style=piece.style)
            for span in piece.spans:
                shown.stylize(span.style, 0, len(shown))
            piece = shown
        out.append_text(piece)
    return out


class CwConsole(Console):
    """A Rich console whose broken pipe is cw's to handle (exit 0), not Rich's (exit 1), and
    whose text never carries a control character from the data (a file name, a session id or a
    message with an escape sequence): :func:`safe` is applied to each rendered segment, after
    Rich's layout and before Rich adds its own styling sequences."""

    #: Columns when the output is not a terminal and ``COLUMNS`` does not say: wide enough that
    #: Rich never cuts an id or a path to ``019f8c04-f…`` (which ``cw show`` then rejects) or
    #: wraps a row; the reader of a pipe is a program or a pager.
    PIPE_WIDTH = 4096

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if not self.is_terminal and not os.environ.get("COLUMNS"):
            self.width = self.PIPE_WIDTH

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(32, "the reader closed the pipe")

    def render_str(self, text: str, **options: Any) -> Text:
        # Strings (a printed line, a table cell) are made safe before layout, so a column is as
        # wide as what is shown; _render_buffer catches Text objects built elsewhere.
        return super().render_str(safe(text), **options)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(safe(segment.text), segment.style)
            for segment in buffer
        )


console = CwConsole(highlight=False)
err_console = CwConsole(stderr=True, highlight=False)


def shown_id(value: str) -> str:
    """An id as Rich markup for people: ids are data, so a ``[`` is not markup and a control
    character (an escape sequence in a hostile log) is shown as ``\\xNN``, never sent to the
    terminal."""
    return escape(safe(value, one_line=True))


def short_session(session_id: str, parent: str | None, width: int | None = None) -> str:
    """A session id for a table row: a sub-agent's is its parent's first 8 characters and its
    own part (``170cebcc…/agent-a325871``), so sub-agents of one parent are told apart from it
    and from each other; any other id longer than ``width`` (None: never) is cut with ``…``
    (``cw show`` accepts a unique prefix of four or more characters)."""
    if parent and session_id.startswith(parent + "/") and len(parent) > 9:
        return f"{parent[:8]}…{session_id[len(parent) :]}"
    if width is not None and len(session_id) > width:
        return session_id[: width - 1] + "…"
    return session_id


def fit_columns(
    width: int,
    natural: dict[str, int],
    drop_order: Iterable[str],
    *,
    flexible: str = "title",
    least: int = 24,
    per_column: int = 2,
) -> tuple[tuple[str, ...], int]:
    """The columns (keys of ``natural``, in its order) a table shows in ``width`` terminal
    columns, and the width left for the ``flexible`` one. ``natural`` is each column's widest
    cell (its label included); every other column keeps its natural width, never cut (a count
    cut to its first digits misleads); ``per_column`` is what each column adds besides its cells
    (padding, a border). Columns are given up in ``drop_order`` until the flexible one has
    ``least`` columns (or its natural width, when narrower), or nothing is left to give up."""
    keys = list(natural)
    for drop in (None, *drop_order):
        if drop is not None:
            keys.remove(drop)
        fixed = sum(natural[k] + per_column for k in keys if k != flexible)
        left = width - fixed - per_column
        if left >= min(least, natural[flexible]):
            return tuple(keys), max(1, min(left, natural[flexible]))
    return tuple(keys), max(1, width - sum(natural[k] + per_column for k in keys))


#: Written as ``\uXXXX`` escapes: DEL, C1 controls and lone surrogates (what a terminal would
#: act on), and U+2028 / U+2029, which JSON allows raw but which Python's ``str.splitlines()``,
#: older JavaScript and many editors take for line breaks: one document stays one line.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def json_safe(text: str) -> str:
    """JSON text (one document or JSON lines, as ``json.dumps(..., ensure_ascii=False)`` writes
    it) with the characters of :data:`_JSON_UNSAFE` written as ``\\uXXXX``: the same values,
    exact JSON, one line per document for every line splitter, and nothing a terminal would act
    on (C0 controls are escaped by JSON already). Such a character can only be inside a JSON
    string, where the escape means the same."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def emit_json(body: Any) -> None:
    """One JSON document on one line of stdout (flushed: consumers read it as it comes). JSON
    escapes C0 controls itself; DEL, C1 controls and lone surrogates are written as ``\\uXXXX``
    escapes too, which decode to the same value: exact JSON, and no raw control on a terminal."""
    sys.stdout.write(json_safe(json.dumps(body, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def emit_answer(answer: Answer) -> None:
    """An engine method's answer as :func:`emit_json` writes it: the JSON the engine wrote, as
    it came (not rebuilt from the record)."""
    emit_json(answer_json(answer))


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
        silence_stdout()
        raise typer.Exit(0) from None
    except Exception as exc:  # the last line of defence: no traceback for users
        if os.environ.get("CW_DEBUG"):
            traceback.print_exc()
        raise fail("internal", f"internal error: {type(exc).__name__}: {exc}", 1, as_json) from None


class CwGroup(TyperGroup):
    """The ``cw`` root command: parses and runs as Typer does, but reports usage errors itself."""

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        prog_name = prog_name or self.name or "cw"  # also under ``python -m cwtui.cli``
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except BrokenPipeError:  # usage text into a closed pipe
            silence_stdout()
            code = 0
        except SystemExit as exc:
            # Typer prints help through its own Rich console, whose broken-pipe handler points
            # stdout at /dev/null and exits 1; a reader closing the pipe is not an error.
            if exc.code != 1 or not _stdout_is_devnull():
                raise
            code = 0
        except NoArgsIsHelpError:
            code = 2  # Typer printed the help while building this error
        except ClickException as exc:
            code = _usage_failure(exc, as_json="--json" in argv)
        except typer.Abort:  # a prompt ended by EOF or Ctrl-C: as an interrupt
            code = _exit_code(fail("interrupted", "interrupted", 130, "--json" in argv))
        except Exception as exc:  # outside any command's guard: still no traceback for users
            if os.environ.get("CW_DEBUG"):
                traceback.print_exc()
            message = f"internal error: {type(exc).__name__}: {exc}"
            code = _exit_code(fail("internal", message, 1, "--json" in argv))
        code = code if isinstance(code, int) else 0  # a command's return value is not a status
        if standalone_mode:
            sys.exit(code)
        return code


def _stdout_is_devnull() -> bool:
    try:
        out, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    return (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino)


def _usage_failure(exc: ClickException, as_json: bool) -> int:
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "cw"
    message = " ".join(exc.format_message().split()).rstrip(".")
    failure = InvalidInput(f"{message} (see '{where} --help')")
    return _exit_code(fail(failure.code, failure.message, failure.exit_code, as_json))


def _exit_code(exit_: typer.Exit) -> int:
    return int(exit_.exit_code)
