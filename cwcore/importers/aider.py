"""Aider: ``<repo>/.aider.chat.history.md``, one Markdown log per repository.

Aider appends to the file as it works: each run opens with ``# aider chat started at
<YYYY-MM-DD HH:MM:SS>``; a user prompt is written as ``#### <line>`` lines; tool and status
output (edits applied, commits, ``/run`` output, warnings) as ``> <line>`` lines; everything else
is the model's answer. What becomes what (docs/importers.md): each run is a session; a run of
``#### `` lines is ONE user message (a ``/command`` is host-made, not a real user message); a run
of ``> `` lines is one tool result of tool ``aider`` (the block before the first prompt, Aider's
startup banner, is ``system`` text); other lines up to the next marker are ONE assistant
message. Ids are ``L<n>`` (the line a message starts at). The banner's ``Main model:`` names the
run's model.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from cwcore.config import Settings
from cwcore.importers.base import Location, project_locations, register
from cwcore.importers.convo import Conversation
from cwcore.importers.lines import Overlong, iter_lines
from cwcore.model import FileParse, ParsedSession

FILE_NAME = ".aider.chat.history.md"
_START = re.compile(r"^# aider chat started at\s*(.*?)\s*$")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")
_MODEL = re.compile(r"^(?:Main )?[Mm]odel: (\S+)")


class _Run:
    def __init__(self, number: int, started: str) -> None:
        self.number = number
        self.started = started
        self.convo = Conversation()
        self.records: list[tuple[int, bytes, str]] = []
        self.model: str | None = None
        self.prompted = False

    def block(self, kind: str, lines: list[tuple[int, str]]) -> None:
        if not lines:
            return
        lines = [(n, t) for n, t in lines if t.strip()] if kind != "assistant" else lines
        if not lines:
            return
        numbers = tuple(n for n, t in lines if t.strip())
        first = numbers[0] if numbers else lines[0][0]
        text = "\n".join(t for _, t in lines).strip("\n")
        convo = self.convo
        if kind == "user":
            self.prompted = True
            real = not text.lstrip().startswith("/")
            convo.add(f"L{first}", "user", "text", text, line=numbers, ts=None, real_user=real)
        elif kind == "output":
            if not self.prompted:
                for _, line in lines:
                    found = _MODEL.match(line.strip())
                    self.model = self.model or (found.group(1) if found else None)
                convo.add(f"L{first}", "system", "text", text, line=numbers, ts=None)
            else:
                convo.result(f"L{first}", None, text, line=numbers, ts=None, name="aider")
        elif text.strip():
            convo.begin_response(self.model)
            convo.assistant(f"L{first}", text, line=numbers, ts=None)


def _kind(line: str) -> str:
    if line.startswith("#### ") or line == "####":
        return "user"
    if line.startswith("> ") or line == ">":
        return "output"
    return "assistant"


def _strip(kind: str, line: str) -> str:
    if kind == "user":
        return line[5:] if line.startswith("#### ") else ""
    if kind == "output":
        return line[2:] if line.startswith("> ") else ""
    return line


class AiderImporter:
    name = "aider"
    not_read = (
        "per-message times (Aider writes none); `.aider.input.history` and "
        "`.aider.llm.history`; edited-file lists inside tool output"
    )
    agent = "aider"
    priority = 55  # before markdown, which takes any .md file
    locations: tuple[Location, ...] = ()
    configured_note = f"`<project>/{FILE_NAME}` for each folder of the `syncProjects` setting"

    def configured_locations(self, settings: Settings | None) -> list[Location]:
        return project_locations(settings, "", (FILE_NAME,))

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if path.name == FILE_NAME:
            return True
        return any(line.startswith(b"# aider chat started at ") for line in head[:3])

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return path.suffix == ".md" or self.sniff(path, head)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        runs: list[_Run] = []
        problems: list[tuple[int, str]] = []
        run: _Run | None = None
        kind = ""
        block: list[tuple[int, str]] = []
        with path.open("rb") as fh:
            for number, raw in iter_lines(fh):
                if isinstance(raw, Overlong):
                    problems.append((number, raw.reason()))
                    continue
                raw = raw.rstrip(b"\r")
                line = raw.decode("utf-8", "replace")
                started = _START.match(line)
                if started:
                    if run is not None:
                        run.block(kind, block)
                    stamp = _STAMP.match(started.group(1))
                    run, kind, block = _Run(number, stamp.group() if stamp else ""), "", []
                    runs.append(run)
                    run.records.append((number, raw, "start"))
                    continue
                if run is None:
                    if line.strip():
                        run = _Run(number, "")  # a log whose first header was cut off
                        runs.append(run)
                    else:
                        continue
                this = _kind(line)  # a blank line is the answer's: it ends a prompt or output
                if this != kind:
                    run.block(kind, block)
                    kind, block = this, []
                block.append((number, _strip(this, line)))
                if line.strip():
                    run.records.append((number, raw, this))
        if run is not None:
            run.block(kind, block)
        repo = path.resolve().parent
        sessions = []
        for r in runs:
            if not any(m.role != "system" for m in r.convo.messages):
                # A run with no prompt, answer or output (a header alone, or the startup
                # banner of a run quit at once) is no conversation: no session is made.
                continue
            digits = re.sub(r"\D", "", r.started) or f"L{r.number}"
            # the repository's name and the run's start: stable while the file grows
            sid = f"aider-{repo.name}-{digits}"
            problems.extend(r.convo.sink.problems)
            sessions.append(
                ParsedSession(
                    session_id=sid,
                    agent=self.agent,
                    project=project or repo.name or "default",
                    events=r.convo.events(r.records),
                    messages=tuple(r.convo.messages),
                    started=_time(r.started),
                    cwd=str(repo),
                    source_path=str(path),
                    resume_command=f"cd {shlex.quote(str(repo))} && aider --restore-chat-history",
                    metadata={"run_line": r.number},
                )
            )
        return FileParse(tuple(sessions), tuple(sorted(problems)))


def _time(value: str) -> str | None:
    """The run's start (Aider writes local time without a zone; it is kept as written, read
    as UTC)."""
    from cwcore.importers.common import norm_time

    return norm_time(value.replace(" ", "T") + "Z") if value else None


register(AiderImporter())
