"""The method table's records: :class:`Method` (one request the engine answers) and
:class:`MethodTable` (every method by name, as the engine dispatches on it).

A method's ``output_bytes`` is the bound the daemon reserves for its answer before it runs (the
daemon clamps it to one frame, 16 MiB); a ``passive`` method is a cheap status read a UI polls
and does not count as foreground activity, so idle-time background work (the quiet-time merge,
embedding) is not held off for as long as a window stays open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cwcore import large_results
from cwcore.contract.methods import Ans, Req, Spec
from cwcore.engine import DEFAULT_OUTPUT_BYTES, Emit, Engine, Handler
from cwcore.errors import CwError


@dataclass(frozen=True)
class Method:
    """One engine method: its protocol ``name``, the ``handler`` that answers it, the output
    bound in bytes, and whether it is passive (see the module docstring)."""

    name: str
    handler: Handler
    output_bytes: int = DEFAULT_OUTPUT_BYTES
    passive: bool = False


def typed(
    spec: Spec[Req, Ans], handler: Callable[[Engine, Req], Ans], *, parts: bool = False
) -> Method:
    """The table's entry for a declared method (:mod:`cwcore.contract.methods`): the request is
    parsed from the call's JSON once (a wrong type or a missing key is ``invalid-input`` naming
    it, before the handler runs) and the answer record serialized once. With ``parts`` an
    answer larger than one frame travels as ordered parts (:func:`cwcore.large_results.send`;
    the face's :meth:`~cwcore.api.Archive.call` joins them): declare such a method's
    ``output_bytes`` as :data:`~cwcore.large_results.MAX_INLINE_BYTES`."""

    def run(engine: Engine, request: Req, emit: Emit, cancel: threading.Event) -> Ans:
        return handler(engine, request)

    run.__doc__ = handler.__doc__
    return streaming(spec, run, parts=parts)


def streaming(
    spec: Spec[Req, Ans],
    handler: Callable[[Engine, Req, Emit, threading.Event], Ans],
    *,
    parts: bool = False,
) -> Method:
    """:func:`typed` for a method that reports as it goes: the handler also gets ``emit`` (its
    progress events, to the caller as they happen) and ``cancel`` (set when the caller went
    away or asked to stop; a long handler checks it between steps)."""

    def answer(
        engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
    ) -> dict[str, Any]:
        body = handler(engine, spec.request.parse(params), emit, cancel).to_json()
        return large_results.send(body, emit) if parts else body

    answer.__doc__ = handler.__doc__
    return Method(
        spec.name,
        answer,
        DEFAULT_OUTPUT_BYTES if spec.output_bytes is None else spec.output_bytes,
        spec.passive,
    )


class MethodTable:
    """Methods by name; a name defined twice raises :class:`CwError` when the table is built,
    so no handler can silently replace another. Satisfies :class:`cwcore.engine.MethodLookup`."""

    def __init__(self, methods: Iterable[Method]) -> None:
        table: dict[str, Method] = {}
        for method in methods:
            if method.name in table:
                raise CwError(f"engine method {method.name!r} is defined twice")
            table[method.name] = method
        self._methods = MappingProxyType(table)

    def get(self, name: str) -> Method | None:
        return self._methods.get(name)

    def handler(self, name: str) -> Handler | None:
        method = self._methods.get(name)
        return method.handler if method is not None else None

    def output_bytes(self, name: str) -> int:
        """The output bound of ``name``, bytes (:data:`DEFAULT_OUTPUT_BYTES` for a name the
        table does not hold: the call is refused anyway)."""
        method = self._methods.get(name)
        return method.output_bytes if method is not None else DEFAULT_OUTPUT_BYTES

    def passive(self, name: str) -> bool:
        method = self._methods.get(name)
        return method is not None and method.passive

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._methods)

    @property
    def passive_names(self) -> frozenset[str]:
        return frozenset(name for name, method in self._methods.items() if method.passive)

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def __iter__(self) -> Iterator[Method]:
        return iter(self._methods.values())

    def __len__(self) -> int:
        return len(self._methods)
