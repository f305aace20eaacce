"""Cursor agent transcripts: ``~/.cursor/projects/<project>/agent-transcripts/``.

Newer versions write ``<id>/<id>.jsonl`` (or ``<id>.jsonl``): one ``{role, message: {content:
[blocks]}}`` object a line, the user's words wrapped in ``<user_query>…</user_query>``. Older ones
wrote ``<id>.txt``: blocks opened by a line ``user:`` or ``assistant:``; inside an assistant
block, ``[Thinking] …`` opens reasoning, ``[Tool call] <name>`` a call whose indented
``key: value`` lines are its input, ``[Tool result] <name>`` its output, until the next marker.
Neither carries ids or times: message ids are ``L<n>`` (the line a message starts at, ``#<k>``
for the k-th block of a JSONL line), times are unset, a text-format result pairs with the
earliest unanswered call of its tool name.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from cwcore.errors import excerpt
from cwcore.importers import cursor_vscdb, sqlite
from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import DEFAULT_PROJECT, read_jsonl
from cwcore.importers.convo import Conversation, obj, text_of
from cwcore.importers.lines import Overlong, iter_lines
from cwcore.model import FileParse, ParsedSession

_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_ROLE_LINE = {"user:": "user", "assistant:": "assistant"}
_MARKERS = ("[Thinking]", "[Tool call] ", "[Tool result]")
#: Folder names under which people keep projects: a project folder name encodes its absolute
#: path with ``-`` for ``/``, so the name is what follows the last of these.
_PARENTS = frozenset({"Documents", "Code", "code", "projects", "repos", "src", "work", "dev"})


def user_text(text: str) -> tuple[str, bool]:
    """The words of a user block and whether the user typed them: the ``<user_query>`` content
    when tagged (the rest is context Cursor attached); untagged text counts as typed."""
    found = _QUERY.findall(text)
    if found:
        return "\n\n".join(found), True
    return text.strip(), True


_KEY_VALUE = re.compile(r"([A-Za-z_][\w.-]*)\s*(?:=|:)\s?(.*)", re.S)


def call_input(text: str) -> Any:
    """A text-format call's input from its (dedented) body: ``key: value`` or ``key=value``
    lines as an object (a line that is neither continues the previous value), a JSON value
    as itself, anything else (a raw patch) as the text; None when empty."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    args: dict[str, Any] = {}
    key = ""
    for line in text.split("\n"):
        found = _KEY_VALUE.fullmatch(line) if not line[:1].isspace() else None
        if found:
            key = found.group(1)
            args[key] = found.group(2).strip()
        elif key:
            args[key] = f"{args[key]}\n{line}".strip("\n")
        else:
            return text
    return args


def project_of(path: Path) -> str | None:
    """The project name from ``projects/<encoded path>/agent-transcripts/…``."""
    parts = path.parts
    if "agent-transcripts" not in parts:
        return None
    index = parts.index("agent-transcripts")
    if index == 0:
        return None
    encoded = parts[index - 1].split("-")
    cut = max((i for i, p in enumerate(encoded) if p in _PARENTS), default=-1)
    tail = "-".join(encoded[cut + 1 :]) if cut + 1 < len(encoded) else ""
    return tail or parts[index - 1] or None


def session_id_of(path: Path) -> str:
    return path.stem


class _Text:
    """The older plain-text transcript, block by block."""

    def __init__(self, convo: Conversation) -> None:
        self.convo = convo
        self.pending: list[tuple[str, str]] = []  # unanswered calls: (tool name, call id)

    def block(self, role: str, start: int, lines: list[tuple[int, str]]) -> None:
        if not lines:
            return
        if role == "user":
            text, real = user_text("\n".join(t for _, t in lines))
            numbers = (start, *(n for n, t in lines if t.strip()))
            self.convo.add(f"L{start}", "user", "text", text, line=numbers, ts=None, real_user=real)
            return
        self.convo.begin_response()
        segment: list[tuple[int, str]] = []
        head: tuple[int, str] | None = None
        for number, text in [*lines, (0, "\x00end")]:
            stripped = text.strip()
            if text == "\x00end" or stripped.startswith(_MARKERS):
                self._segment(head, segment, start)
                head, segment = ((number, stripped), []) if text != "\x00end" else (None, [])
                continue
            segment.append((number, text))

    def _segment(
        self, head: tuple[int, str] | None, body: list[tuple[int, str]], start: int
    ) -> None:
        """One marker's segment: what it owns runs to the first blank line (a call owns its
        indented lines); anything after is assistant text."""
        if head is None:
            self._text(body, start)
            return
        number, marker = head
        first = next((t for _, t in body if t.strip()), "")
        if marker.startswith("[Tool call] ") or first[:1].isspace():
            # Indented lines belong to the marker (blank lines between them too); the first
            # line at the left margin is the assistant's prose again.
            cut = next((i for i, (_, t) in enumerate(body) if t and not t[0].isspace()), len(body))
        else:
            # Output written at the left margin runs to the first blank line.
            cut = next((i for i, (_, t) in enumerate(body) if not t.strip()), len(body))
        owned, rest = body[:cut], body[cut:]
        text = textwrap.dedent("\n".join(t for _, t in owned)).strip("\n")
        lines = (number, *(n for n, t in owned if t.strip()))
        if marker.startswith("[Thinking]"):
            said = "\n".join(x for x in (marker.removeprefix("[Thinking]").strip(), text) if x)
            self.convo.add(f"L{number}", "assistant", "thinking", said, line=lines, ts=None)
        elif marker.startswith("[Tool call] "):
            name = marker.removeprefix("[Tool call] ").strip() or None
            self.convo.call(f"L{number}", name, call_input(text), line=lines, ts=None)
            self.pending.append((name or "", f"L{number}"))
        else:
            name = marker.removeprefix("[Tool result]").strip()
            # A named result answers the earliest unanswered call of that tool; a bare
            # ``[Tool result]`` the earliest unanswered call.
            index = next(
                (i for i, (tool, _) in enumerate(self.pending) if not name or tool == name), None
            )
            call = self.pending.pop(index)[1] if index is not None else None
            self.convo.result(f"L{number}", call, text, line=lines, ts=None, name=name or None)
        self._text(rest, start)

    def _text(self, body: list[tuple[int, str]], start: int) -> None:
        text = "\n".join(t for _, t in body).strip()
        if text:
            first = next(n for n, t in body if t.strip())
            lines = tuple(n for n, t in body if t.strip())
            self.convo.begin_response()
            self.convo.assistant(f"L{first}", text, line=lines, ts=None)


class CursorImporter:
    name = "cursor"
    not_read = (
        "times and ids in agent transcripts (Cursor writes none); `state.vscdb` keys other "
        "than composers, bubbles and the aichat panel; a composer's unsent draft `text`"
    )
    agent = "cursor"
    priority = 60
    locations: tuple[Location, ...] = (
        Location("~/.cursor/projects", ("*.jsonl", "*.txt")),
        Location("$XDG_CONFIG_HOME/Cursor/User", ("state.vscdb",), ("linux",), 2),
        Location("~/Library/Application Support/Cursor/User", ("state.vscdb",), ("darwin",), 2),
        Location("$APPDATA/Cursor/User", ("state.vscdb",), ("win32",), 2),
    )

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if sqlite.looks_like_sqlite(head):
            return cursor_vscdb.sniff(path, head)
        if path.suffix == ".txt":
            return "agent-transcripts" in path.parts and any(
                line.strip() in (b"user:", b"assistant:") for line in head
            )
        objs = json_lines(head)
        return (
            bool(objs)
            and all(
                isinstance(o.get("role"), str)
                and isinstance(o.get("message"), dict)
                and not ({"type", "uuid", "sessionId", "session", "id"} & o.keys())
                for o in objs
            )
            and any(o["role"] in ("user", "assistant") for o in objs)
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        if sqlite.looks_like_sqlite(head):
            return cursor_vscdb.sniff(path, head)
        if path.suffix == ".txt":
            return any(line.strip() in (b"user:", b"assistant:") for line in head)
        return any(
            o.get("role") in ("user", "assistant") and isinstance(o.get("message"), dict)
            for o in json_lines(head)
        )

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        if path.suffix == ".vscdb":
            return cursor_vscdb.parse(path, self.agent, project)
        convo = Conversation()
        records: list[tuple[int, bytes, str]] = []
        problems: list[tuple[int, str]] = []
        if path.suffix == ".txt":
            self._parse_text(path, convo, records, problems)
        else:
            self._parse_jsonl(path, convo, records, problems)
        if not records:
            return FileParse((), tuple(problems))
        problems.extend(convo.sink.problems)
        session = ParsedSession(
            session_id=session_id_of(path),
            agent=self.agent,
            project=project or project_of(path) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            source_path=str(path),
        )
        return FileParse((session,), tuple(sorted(problems)))

    def _parse_jsonl(
        self,
        path: Path,
        convo: Conversation,
        records: list[tuple[int, bytes, str]],
        problems: list[tuple[int, str]],
    ) -> None:
        lines, bad = read_jsonl(path)
        problems.extend(bad)
        for line in lines:
            role, message = line.obj.get("role"), line.obj.get("message")
            if not isinstance(role, str) or not isinstance(message, dict):
                problems.append((line.number, "line without a 'role' and a 'message' object"))
                continue
            if role not in ("user", "assistant"):
                problems.append((line.number, f"role {excerpt(role)} is not read (skipped)"))
                continue
            records.append((line.number, line.raw, role))
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            blocks = [b for b in blocks if isinstance(b, dict)]
            base = f"L{line.number}"
            if role == "user":
                text = "\n\n".join(
                    text_of(b.get("text")) for b in blocks if b.get("type") == "text"
                )
                said, real = user_text(text)
                convo.user(base, said, line=line.number, ts=None, real=real)
                for k, block in enumerate(blocks, start=1):
                    if block.get("type") == "tool_result":
                        call = text_of(block.get("tool_use_id")) or None
                        out = block.get("content")
                        out = out if isinstance(out, str) else _blocks_text(out)
                        convo.result(
                            f"{base}#{k}",
                            call,
                            out,
                            line=line.number,
                            ts=None,
                            is_error=bool(block.get("is_error")),
                        )
                continue
            convo.begin_response()
            for k, block in enumerate(blocks, start=1):
                kind = block.get("type")
                if kind in ("thinking", "reasoning"):
                    said = text_of(block.get("thinking")) or text_of(block.get("text"))
                    convo.thinking(f"{base}#thinking{k}", said, line=line.number, ts=None)
            text = "\n\n".join(text_of(b.get("text")) for b in blocks if b.get("type") == "text")
            convo.assistant(base, text, line=line.number, ts=None)
            for k, block in enumerate(blocks, start=1):
                if block.get("type") in ("tool_use", "tool_call"):
                    call_id = text_of(block.get("id")) or f"{base}#{k}"
                    name = text_of(block.get("name")) or None
                    args = block.get("input", block.get("arguments"))
                    convo.call(call_id, name, args, line=line.number, ts=None)

    def _parse_text(
        self,
        path: Path,
        convo: Conversation,
        records: list[tuple[int, bytes, str]],
        problems: list[tuple[int, str]],
    ) -> None:
        reader = _Text(convo)
        role: str | None = None
        start = 0
        block: list[tuple[int, str]] = []
        with path.open("rb") as fh:
            for number, raw in iter_lines(fh):
                if isinstance(raw, Overlong):
                    problems.append((number, raw.reason()))
                    continue
                raw = raw.rstrip(b"\r")
                text = raw.decode("utf-8", "replace")
                if text.strip():
                    records.append((number, raw, role or "text"))
                if text.strip() in _ROLE_LINE:
                    if role is not None:
                        reader.block(role, start, block)
                    role, start, block = _ROLE_LINE[text.strip()], number, []
                    records[-1] = (number, raw, role)
                elif role is not None:
                    block.append((number, text))
        if role is not None:
            reader.block(role, start, block)


def _blocks_text(value: object) -> str:
    if isinstance(value, list):
        return "\n\n".join(text_of(obj(b).get("text")) for b in value if obj(b).get("text"))
    return text_of(value)


register(CursorImporter())
