"""The one clock of the engine.

``CW_NOW`` (ISO-8601) fixes it, so tests and evaluations reproduce; otherwise it is the system clock
in UTC. Every timestamp the engine stores is an aware UTC ``datetime`` rendered with :func:`iso`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from cwcore.errors import InvalidInput, excerpt


def parse_time(text: str) -> datetime:
    """Parse an ISO-8601 instant (``Z`` accepted, naive means UTC) or a bare date into UTC."""
    value = text.strip()
    if value.endswith("Z") or value.endswith("z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"not an ISO-8601 date or time: {excerpt(text)}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def now() -> datetime:
    """The current instant: ``CW_NOW`` when set, else the system clock, always UTC."""
    fixed = os.environ.get("CW_NOW")
    if fixed:
        return parse_time(fixed)
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """Render an instant as ISO-8601 UTC with millisecond precision and a ``Z`` suffix."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the Unix epoch."""
    return int(moment.timestamp() * 1000)
