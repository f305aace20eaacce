"""Per-source coverage: what ``cw sync`` found, read and skipped at each standard location.

Each sync writes one small record per location into the store's meta (key ``sync-sources``),
so ``cw sources`` can say, without walking anything again, how many files a location held,
how many sessions and messages they imported, which files were skipped and why, and when the
location was last synced. A record holds counts and at most :data:`MAX_SKIPPED_LISTED` example
files, so its size is bounded whatever the location holds; locations no longer registered are
dropped after :data:`MAX_RECORDS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cwcore.contract.sources import SkippedFile, SourceRow, SourcesReport, SourcesSummary

META_KEY = "sync-sources"
#: Skipped files listed by name per location (the rest are counted by reason).
MAX_SKIPPED_LISTED = 10
#: Records kept at most (registered locations come first).
MAX_RECORDS = 256


@dataclass
class Report:
    """What one sync met at one location (mutable while the sync walks it)."""

    format: str
    location: str  # the registry's label, e.g. "~/.codex/sessions/**/*.jsonl"
    path: str  # the folder on this machine
    found: bool
    files: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> reason
    companions: int = 0  # files read with another file's session (sidecars, a JSON tree)

    def skip(self, path: str, reason: str) -> None:
        self.skipped[path] = reason


def key(fmt: str, path: str) -> str:
    return f"{fmt} {path}"


def records(
    reports: list[Report], seen: dict[str, dict[str, Any]], now: str
) -> dict[str, dict[str, Any]]:
    """The persisted record of each reported location. Sessions and messages are those of the
    location's files as of their last successful import (an unchanged file keeps its counts)."""
    out: dict[str, dict[str, Any]] = {}
    for report in reports:
        reasons: dict[str, int] = {}
        for reason in report.skipped.values():
            reasons[reason] = reasons.get(reason, 0) + 1
        imported = [seen[f] for f in report.files if f in seen and f not in report.skipped]
        out[key(report.format, report.path)] = {
            "format": report.format,
            "location": report.location,
            "path": report.path,
            "found": report.found,
            "files": len(report.files),
            "sessions": sum(int(s.get("sessions", 0)) for s in imported),
            "messages": sum(int(s.get("messages", 0)) for s in imported),
            "skipped": len(report.skipped),
            "companions": report.companions,
            "skippedReasons": dict(sorted(reasons.items())),
            "skippedFiles": [
                {"path": p, "reason": r}
                for p, r in sorted(report.skipped.items())[:MAX_SKIPPED_LISTED]
            ],
            "lastSync": now,
        }
    return out


def merge(
    previous: dict[str, Any] | None, current: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """This sync's records over the earlier ones (a location synced under another home stays
    listed until :data:`MAX_RECORDS` newer ones push it out)."""
    merged = dict(current)
    older = sorted(
        ((k, v) for k, v in (previous or {}).items() if k not in current and isinstance(v, dict)),
        key=lambda kv: str(kv[1].get("lastSync", "")),
        reverse=True,
    )
    for k, v in older[: max(0, MAX_RECORDS - len(merged))]:
        merged[k] = v
    return merged


def report(
    located: list[tuple[str, str, str, bool]], persisted: dict[str, Any] | None
) -> SourcesReport:
    """``cw sources``: :func:`listing` and its :func:`summary`."""
    rows = listing(located, persisted)
    return SourcesReport(rows, summary(rows))


def listing(
    located: list[tuple[str, str, str, bool]], persisted: dict[str, Any] | None
) -> tuple[SourceRow, ...]:
    """One row per registered location ``(format, label, path, exists)``, with what the last
    sync recorded there (zeros and ``lastSync`` null when never synced)."""
    stored = persisted or {}
    rows = []
    for fmt, label, path, exists in located:
        record = stored.get(key(fmt, path))
        if not isinstance(record, dict):
            rows.append(SourceRow(fmt, label, path, exists))
            continue
        rows.append(
            SourceRow(
                format=fmt,
                location=label,
                path=path,
                found=exists,
                files=int(record.get("files", 0)),
                sessions=int(record.get("sessions", 0)),
                messages=int(record.get("messages", 0)),
                skipped=int(record.get("skipped", 0)),
                skipped_reasons=tuple(dict(record.get("skippedReasons", {})).items()),
                skipped_files=tuple(
                    SkippedFile.from_json(f) for f in record.get("skippedFiles", [])
                ),
                last_sync=record.get("lastSync"),
                companions=int(record.get("companions", 0)),
            )
        )
    return tuple(rows)


def summary(rows: tuple[SourceRow, ...]) -> SourcesSummary:
    """Locations found, files, sessions, messages, skipped files, and the latest sync."""
    stamps = [r.last_sync for r in rows if r.last_sync]
    return SourcesSummary(
        locations=len(rows),
        found=sum(1 for r in rows if r.found),
        files=sum(r.files for r in rows),
        sessions=sum(r.sessions for r in rows),
        messages=sum(r.messages for r in rows),
        skipped=sum(r.skipped for r in rows),
        last_sync=max(stamps) if stamps else None,
    )
