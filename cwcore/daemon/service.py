"""What the daemon serves: the :class:`Service` protocol, its factory spec, and the request id.

The server owns transport, limits and lifecycle; a Service owns the store and answers requests.
The real one is :func:`cwcore.methods.make_service`; tests plug in their own with
``--service module:factory``.
"""

from __future__ import annotations

import contextvars
import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from cwcore.errors import DaemonError

#: The factory the daemon loads unless told otherwise.
DEFAULT_SERVICE = "cwcore.methods:make_service"

Emit = Callable[[dict[str, Any]], None]


class Service(Protocol):
    """An engine the daemon serves. Every method except :meth:`call` runs briefly.

    * ``call`` runs in a worker thread (at most a few at a time); it returns a JSON-able dict or
      raises :class:`~cwcore.errors.CwError`. It may call ``emit(event)`` to stream intermediate
      events before returning; ``emit`` blocks while the socket is backed up (backpressure) and
      silently drops events once the peer has gone (the result is still kept for a retry).
      ``cancel`` is set when the client cancels or the daemon's drain deadline passes.
      :func:`current_request_id` names the request, so writes can be idempotent by request id
      across a daemon restart (the daemon's own replay cache lives in memory only).
    * ``max_output_bytes`` is the request's output bound in bytes, reserved before dispatch; the
      server clamps it to one frame (16 MiB). It runs on the event loop: it must not block.
    * ``status`` returns extra fields for ``daemon status`` (runs in a helper thread).
    * ``start_workers`` starts background work once, after the socket listens. The work must be
      resumable at the next start (durable cursors, an outbox): ``daemon.stop`` and signals stop
      it whatever it is doing.
    * ``background_pending`` (optional) names the background work still to do and progressing
      (``"embedding 1,234 windows"``), or returns None. Once the idle grace has passed, the
      daemon stays while it names some, and exits when it returns None: an archive imported and
      left alone is still embedded to the end. It runs in a helper thread, about once a second
      while the daemon is idle past its grace: a few point reads, never a scan.
    * ``close`` stops the workers and closes the store; it is called once, at exit.
    """

    capabilities: frozenset[str]
    build: str

    def call(
        self, method: str, params: dict[str, Any], emit: Emit, cancel: threading.Event
    ) -> dict[str, Any]: ...

    def max_output_bytes(self, method: str, params: dict[str, Any]) -> int: ...

    def status(self) -> dict[str, Any]: ...

    def start_workers(self) -> None: ...

    def close(self) -> None: ...


ServiceFactory = Callable[[Path], Service]

_REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "cw_daemon_request_id", default=None
)


def background_pending(service: Service) -> str | None:
    """The service's pending background work (None when it has none or cannot say)."""
    probe = getattr(service, "background_pending", None)
    if probe is None:
        return None
    reason = probe()
    return None if reason is None else str(reason)


def current_request_id() -> str | None:
    """The id of the request the calling worker thread is serving (None outside a request)."""
    return _REQUEST_ID.get()


def bind_request_id(request_id: str | None) -> contextvars.Token[str | None]:
    """Set the current request id (server use); pass the token to :func:`unbind_request_id`."""
    return _REQUEST_ID.set(request_id)


def unbind_request_id(token: contextvars.Token[str | None]) -> None:
    _REQUEST_ID.reset(token)


def load_factory(spec: str) -> ServiceFactory:
    """Import ``module:attribute`` and return the factory; :class:`DaemonError` when it fails."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise DaemonError(f"service spec {spec!r} is not of the form module:factory")
    try:
        module = importlib.import_module(module_name)
        factory = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise DaemonError(f"cannot load service {spec!r}: {exc}") from None
    if not callable(factory):
        raise DaemonError(f"service {spec!r} is not callable")
    result: ServiceFactory = factory
    return result
