"""One error hierarchy for the whole engine.

Every error carries a stable machine ``code`` (kebab-case, never renamed) and an ``exit_code`` that
the CLI uses verbatim; ``docs/cli.md`` documents the table. The core never exits the process: faces
catch :class:`CwError`, print one line (or the JSON error object) and exit with ``exit_code``.
"""

from __future__ import annotations

from typing import Any, ClassVar

#: Characters of a user's value an error message may quote (:func:`excerpt`).
EXCERPT_CHARS = 200
#: Longest message an error keeps, characters: a backstop behind :func:`excerpt`, so that no
#: input, however it reaches a message, comes back whole (a 20 MiB query stays a short error).
MAX_MESSAGE_CHARS = 4096


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``value`` quoted for an error message (``repr`` style), cut to about ``limit``
    characters: a longer value ends in an ellipsis and states its full length, e.g.
    ``'aaaa…' (20971520 characters)``. Non-strings are shown by their ``repr``."""
    if not isinstance(value, str):
        text = repr(value)
        return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
    head = value[:limit]
    shown = repr(head)
    if len(shown) > 2 * limit:  # escapes (control characters, lone surrogates) lengthen it
        head = value[: max(1, limit // 8)]
        shown = repr(head)
    if len(head) == len(value):
        return shown
    return f"{shown[:-1]}…{shown[-1]} ({len(value)} characters)"


#: code -> the class that declared it. Filled by :meth:`CwError.__init_subclass__` as classes are
#: defined; a second class declaring a taken code is a programming error caught at import.
_BY_CODE: dict[str, type[CwError]] = {}


def _register(cls: type[CwError]) -> None:
    taken = _BY_CODE.get(cls.code)
    if taken is not None and taken is not cls:
        raise TypeError(f"error code {cls.code!r} of {cls.__qualname__} is {taken.__qualname__}'s")
    _BY_CODE[cls.code] = cls


def registered() -> dict[str, type[CwError]]:
    """Every error code known so far and its class (a copy). Codes of classes defined outside
    this module appear once their module is imported."""
    return dict(_BY_CODE)


def _bounded(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return f"{message[:MAX_MESSAGE_CHARS]}… (message cut from {len(message)} characters)"


class CwError(Exception):
    """Base of every error cw reports to a user or a client. The message is bounded to
    :data:`MAX_MESSAGE_CHARS`; sites that quote user input use :func:`excerpt`."""

    code: ClassVar[str] = "internal"
    exit_code: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Registration by construction: a subclass defined in any module (not only here) is
        # known to :func:`from_json`, so an error that crosses the daemon's socket comes back as
        # itself rather than ``internal``. A subclass that declares no code of its own reports its
        # parent's and is not registered (the parent stands for it on the wire).
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            _register(cls)

    def __init__(self, message: str, **details: Any) -> None:
        message = _bounded(str(message))
        super().__init__(message)
        self.message = message
        self.details = details

    def to_json(self) -> dict[str, Any]:
        """The public error object body: ``{"code", "message"}`` plus optional details."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class InvalidInput(CwError):
    """The request itself is malformed: a bad option value, an unsafe id, an unparseable line."""

    code = "invalid-input"
    exit_code = 2


class UnsafeKey(InvalidInput):
    """An identifier cannot be encoded into a store key (NUL, separator, too long, bad Unicode)."""

    code = "unsafe-key"


class LimitExceeded(InvalidInput):
    """An admission or request limit was exceeded; nothing was written."""

    code = "limit-exceeded"


class UnknownFormat(InvalidInput):
    """A file named explicitly is not a session log cw can read."""

    code = "unknown-format"


class LocatorInvalid(InvalidInput):
    """A locator cannot be used here: malformed, tampered, from another store, or outside the
    caller's project or session (one answer for all, so it never tells whether a foreign target
    exists)."""

    code = "locator-invalid"


class ImportErrors(InvalidInput):
    """An import or sync rejected some lines or files; everything else was imported and its
    summary lists what was rejected."""

    code = "import-errors"


class NotFound(CwError):
    """A session, document, locator target or other named thing does not exist."""

    code = "not-found"
    exit_code = 3


class Conflict(CwError):
    """The request contradicts stored state (e.g. a subject key already has a live holder)."""

    code = "conflict"
    exit_code = 4


class StoreError(CwError):
    """The store cannot be opened or used."""

    code = "store"
    exit_code = 5


class StoreLocked(StoreError):
    """Another process holds the RocksDB lock (normally the daemon)."""

    code = "store-locked"


class StoreVersionError(StoreError):
    """The store was written by a newer cw whose schema this build does not know."""

    code = "store-version"


class CorruptRecord(StoreError):
    """A canonical record failed to decode. Canonical records are never repaired from derived
    ones."""

    code = "corrupt-record"


class DaemonError(CwError):
    """The daemon could not be reached, started, or it refused the connection."""

    code = "daemon"
    exit_code = 6


class ProtocolError(DaemonError):
    """A frame or handshake violated the socket protocol."""

    code = "protocol"


class Busy(DaemonError):
    """A daemon-wide limit (connections, buffers) refused the request; retry later."""

    code = "busy"


class UnsafeSocket(DaemonError):
    """The socket directory is not a private, current-user-owned, non-symlinked directory."""

    code = "unsafe-socket"


class ModelUnavailable(CwError):
    """A local model (embedder, reranker) is not installed or failed to load."""

    code = "model-unavailable"
    exit_code = 7


def from_json(body: dict[str, Any]) -> CwError:
    """Rebuild a typed error from its JSON body (used by clients of the daemon)."""
    cls = _BY_CODE.get(str(body.get("code")), CwError)
    err = cls(str(body.get("message", "")), **dict(body.get("details") or {}))
    return err


_register(CwError)

#: code -> exit status for every error this module defines (the table ``docs/cli.md`` documents;
#: a subclass elsewhere that declares a code must be defined here instead — a test walks them).
EXIT_CODES: dict[str, int] = {code: cls.exit_code for code, cls in sorted(_BY_CODE.items())}
