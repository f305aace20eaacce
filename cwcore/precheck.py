"""Requests refused before the store is opened: the checks that need no stored data.

A face calls :func:`check` (through :meth:`cwcore.api.Archive.check`) before it opens the
archive, so a request that is certain to be refused — a limit out of range, an unknown scope or
relation, a date that does not parse — neither creates ``CW_HOME`` nor starts a daemon. The
engine runs the same functions on every request it serves, so the answer is the same error
either way. Methods without such checks pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cwcore.errors import InvalidInput


def search(params: dict[str, Any]) -> Any:
    """The parsed :class:`~cwcore.contract.search.SearchRequest` (its own validation)."""
    from cwcore.contract.search import SearchRequest

    return SearchRequest.parse(params)


def gather(params: dict[str, Any]) -> tuple[Any, int]:
    """The search request of a gather (its policy ``always``) and its ``neighbors`` (0 to 8),
    as :meth:`~cwcore.contract.gather.GatherRequest.parse` checks them."""
    from cwcore.contract.gather import GatherRequest

    request = GatherRequest.parse(params)
    return request.search, request.neighbors


def sessions(params: dict[str, Any]) -> None:
    """The request record's checks (types, limit, since, sort key) and, on the default order,
    the cursor. A cursor of a sorted or matched listing is an offset that only the listing
    itself can check."""
    from cwcore.browse import check_page
    from cwcore.contract.sessions import SessionsRequest

    req = SessionsRequest.parse({k: v for k, v in params.items() if v is not None})
    if req.cursor and req.sort == "started" and not req.ascending and not req.match:
        check_page(limit=req.limit, cursor=req.cursor)


def recall(params: dict[str, Any]) -> None:
    """The keys given, as the recall request declares them (the answer's budget: ``neighbors``
    and ``maxTokens`` ranges); the locator may come later (stdin)."""
    from cwcore.contract.recall import RecallRequest

    RecallRequest.check_present(params)


def import_(params: dict[str, Any]) -> None:
    """A forced ``format`` must be one cw knows."""
    from cwcore.importers.pipeline import check_format

    fmt = params.get("format", "auto")
    if not isinstance(fmt, str):
        raise InvalidInput("format must be a string")
    check_format(fmt)


def export(params: dict[str, Any]) -> None:
    from cwcore.contract.views import check_export_format

    check_export_format(params.get("format", "md"))


_CHECKS: dict[str, Callable[[dict[str, Any]], object]] = {
    "import": import_,
    "export": export,
    "search": search,
    "gather": gather,
    "sessions": sessions,
    "recall": recall,
}


def check(method: str, params: dict[str, Any]) -> None:
    """Raise the error ``method`` would certainly raise for ``params``; None otherwise."""
    run = _CHECKS.get(method)
    if run is not None:
        run(params)
