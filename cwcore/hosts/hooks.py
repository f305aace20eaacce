"""Hook installers: ready-to-use configurations that connect agent hosts to cw.

On every user prompt the host runs cw's lean hook client (``python -m cwcore.hosts.hook_client``:
it reads the host's hook payload on stdin and prints the frozen hint and the turn's memory
block, if any, which the host inserts right after the prompt); when a session starts, the same
client prints the session-start memory block; when an answer or a session ends, the host runs
``python -m cwcore.hosts.hooks session-end``, which imports the new lines of that transcript
(``cw sync`` when the payload names none), so the live session is known to preflight and to
search from its next prompt on. Per host:

- ``claude-code``: ``~/.claude/settings.json``, command hooks ``hooks.SessionStart``,
  ``hooks.UserPromptSubmit``, ``hooks.Stop`` (``async``: imports after each answer without
  delaying it) and ``hooks.SessionEnd``, merged into the JSON (everything else is kept, in order).
- ``codex``: ``$CODEX_HOME/config.toml`` (default ``~/.codex``), one marked block appended at the
  end: ``[mcp_servers.cw]`` (the MCP server, bound to ``--project``) and inline
  ``[[hooks.SessionStart]]`` / ``[[hooks.UserPromptSubmit]]`` / ``[[hooks.Stop]]`` hooks (Codex
  has no session-end event).
- ``pi``: ``~/.pi/agent/extensions/cw.ts``, an auto-discovered extension owned entirely by cw
  (``before_agent_start`` injects the hint and the memory block as one persisted message — pi's
  ``session_start`` cannot add a message, so pi has no session-start block; ``agent_end``, in
  the background, and ``session_shutdown`` import).

Every operation is computed first as a :class:`Change` (the file's text before and after), so
``--dry-run`` prints exactly what would be written and writes nothing. Installing twice changes
nothing; uninstall removes exactly cw's entries, so a file that had none before returns to its
previous bytes (a file cw created is deleted). The Codex block and the pi file are exact by
construction. JSON cannot be edited in place, so installing into Claude Code's file keeps a copy
of its previous text under ``CW_HOME/hosts/``; uninstall writes that copy back when the file,
without cw's entries, still means the same (else the file keeps its edits, re-serialized in its
own indentation).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.errors import Conflict, InvalidInput, excerpt

HOSTS = ("claude-code", "codex", "pi")
HINT_MODULE = "cwcore.hosts.hook_client"
IMPORT_MODULE = "cwcore.hosts.hooks"  # this module (``__name__`` is ``__main__`` under ``-m``)
HINT_TIMEOUT_S = 15
IMPORT_TIMEOUT_S = 60
_MARKERS = (f"-m {HINT_MODULE}", f"-m {IMPORT_MODULE} session-end")


@dataclass(frozen=True)
class Change:
    """One settings file before and after an operation; ``None`` means the file is absent."""

    host: str
    path: Path
    before: str | None
    after: str | None
    notes: tuple[str, ...] = field(default=())
    # Claude Code only: (copy file, its new text — None deletes it), written with the change.
    backup: tuple[Path, str | None] | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "path": str(self.path),
            "changed": self.changed,
            "delete": self.after is None and self.before is not None,
            "content": self.after,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Commands:
    """What a host runs: the prompt hook, the session-end import, and (Codex's MCP server) the
    python that runs ``cw``."""

    hint: str
    session_end: str
    python: str

    @classmethod
    def for_python(cls, python: str | None = None) -> Commands:
        python = python or sys.executable
        return cls(
            hint=shlex.join([python, "-m", HINT_MODULE]),
            session_end=shlex.join([python, "-m", IMPORT_MODULE, "session-end"]),
            python=python,
        )


def _check_host(host: str) -> None:
    if host not in HOSTS:
        raise InvalidInput(f"unknown host {excerpt(host)}: one of {', '.join(HOSTS)}")


def default_path(host: str, home: Path | None = None) -> Path:
    _check_host(host)
    home = home or Path.home()
    if host == "claude-code":
        return home / ".claude" / "settings.json"
    if host == "codex":
        codex_home = os.environ.get("CODEX_HOME")
        return (Path(codex_home) if codex_home else home / ".codex") / "config.toml"
    return home / ".pi" / "agent" / "extensions" / "cw.ts"


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None


def _is_cw_command(command: object) -> bool:
    return isinstance(command, str) and any(m in command for m in _MARKERS)


# -- Claude Code: settings.json -------------------------------------------------------------------


def _claude_groups(cmds: Commands) -> dict[str, dict[str, Any]]:
    def group(command: str, timeout: int, **extra: Any) -> dict[str, Any]:
        return {"hooks": [{"type": "command", "command": command, "timeout": timeout, **extra}]}

    # Stop imports after every answer, in the background (``async``); SessionEnd the rest.
    return {
        "SessionStart": group(cmds.hint, HINT_TIMEOUT_S),
        "UserPromptSubmit": group(cmds.hint, HINT_TIMEOUT_S),
        "Stop": group(cmds.session_end, IMPORT_TIMEOUT_S, **{"async": True}),
        "SessionEnd": group(cmds.session_end, IMPORT_TIMEOUT_S),
    }


def _json_load(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} must hold a JSON object")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise Conflict(f"{path}: `hooks` must map event names to lists of hook groups")
    return data


def _json_dump(data: dict[str, Any], like: str | None) -> str:
    """Serialize in the style of the file it came from (indent unit, final newline)."""
    if not like or not like.strip():
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    tail = "\n" if like.endswith("\n") else ""
    if "\n" not in like.strip():
        separators = (", ", ": ") if '": ' in like else (",", ":")
        return json.dumps(data, ensure_ascii=False, separators=separators) + tail
    match = re.search(r"\n([ \t]+)\S", like)
    indent = match.group(1) if match else "  "
    return json.dumps(data, indent=indent, ensure_ascii=False) + tail


def _strip_cw(groups: list[Any]) -> list[Any]:
    out = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [h for h in group["hooks"] if not _is_cw_command(_command(h))]
            if len(kept) != len(group["hooks"]):
                if not kept:
                    continue
                group = {**group, "hooks": kept}
        out.append(group)
    return out


def _command(hook: Any) -> Any:
    return hook.get("command") if isinstance(hook, dict) else None


def _cw_groups(groups: list[Any]) -> list[Any]:
    return [
        g
        for g in groups
        if isinstance(g, dict)
        and isinstance(g.get("hooks"), list)
        and any(_is_cw_command(_command(h)) for h in g["hooks"])
    ]


def _backup_file(path: Path) -> Path:
    from cwcore.config import default_home

    key = hashlib.sha256(str(path.expanduser().resolve()).encode()).hexdigest()[:32]
    return default_home() / "hosts" / f"claude-settings-{key}.json"


def _claude_install(path: Path, before: str | None, cmds: Commands) -> Change:
    data = _json_load(path, before)
    new = copy.deepcopy(data)
    hooks = new.setdefault("hooks", {})
    for event, group in _claude_groups(cmds).items():
        groups = hooks.get(event, [])
        if _cw_groups(groups) != [group]:
            hooks[event] = [*_strip_cw(groups), group]
    if new == data and before is not None:
        return Change("claude-code", path, before, before)
    backup = None
    if not _claude_entries(path, before):  # a clean file: keep its text for uninstall
        copy_text = json.dumps({"path": str(path), "before": before}, ensure_ascii=False)
        backup = (_backup_file(path), copy_text)
    notes = []
    if before and _json_dump(data, before) != before:
        notes.append(f"{path} is re-serialized in its own indentation; uninstall restores it")
    return Change("claude-code", path, before, _json_dump(new, before), tuple(notes), backup)


def _claude_uninstall(path: Path, before: str) -> Change:
    after = _claude_strip(path, before)
    if after == before:
        return Change("claude-code", path, before, before)
    copy_file = _backup_file(path)
    try:
        kept = json.loads(copy_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = None
    if (
        isinstance(kept, dict)
        and kept.get("path") == str(path)
        and _sans_empty(_json_load(path, kept.get("before")))
        == _sans_empty(_json_load(path, after))
    ):
        after = kept.get("before")  # the same settings as before install: the same bytes
    return Change("claude-code", path, before, after, backup=(copy_file, None))


def _sans_empty(data: dict[str, Any]) -> dict[str, Any]:
    """Settings up to empty hook lists and an empty ``hooks`` (which uninstall cannot tell from
    ones install created)."""
    hooks = {k: v for k, v in data.get("hooks", {}).items() if v}
    out = {k: v for k, v in data.items() if k != "hooks"}
    if hooks:
        out["hooks"] = hooks
    return out


def _claude_strip(path: Path, before: str) -> str | None:
    data = _json_load(path, before)
    hooks = data.get("hooks", {})
    touched = False
    for event in list(hooks):
        kept = _strip_cw(hooks[event])
        if kept != hooks[event]:
            touched = True
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not touched:
        return before
    if not hooks:
        del data["hooks"]
    return None if not data else _json_dump(data, before)


def _claude_entries(path: Path, text: str | None) -> list[dict[str, Any]]:
    hooks = _json_load(path, text).get("hooks", {})
    return [
        {"event": event, "command": _command(h)}
        for event, groups in hooks.items()
        for g in _cw_groups(groups)
        for h in g["hooks"]
        if _is_cw_command(_command(h))
    ]


# -- Codex: config.toml ---------------------------------------------------------------------------

_BEGIN = "# >>> cw: added by `cw hooks install codex`; `cw hooks uninstall codex` removes it"
# How the block was appended, so that removing it restores the exact bytes: after a blank line
# (plain), after a newline and a blank line (the file had no final newline), or as a new file.
_BEGIN_NOEOL = _BEGIN + " (the file had no final newline)"
_BEGIN_NEW = _BEGIN + " (and the file it created)"
_END = "# <<< cw"


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _codex_block(cmds: Commands, project: str, begin: str) -> str:
    args = ", ".join(_toml_str(a) for a in ["-m", "cwtui.cli", "mcp", "--project", project])
    lines = [
        begin,
        "[mcp_servers.cw]",
        f"command = {_toml_str(cmds.python)}",
        f"args = [{args}]",
    ]
    if os.environ.get("CW_HOME"):
        lines.append(f"env = {{ CW_HOME = {_toml_str(os.environ['CW_HOME'])} }}")
    for event, command, timeout in (
        ("SessionStart", cmds.hint, HINT_TIMEOUT_S),
        ("UserPromptSubmit", cmds.hint, HINT_TIMEOUT_S),
        ("Stop", cmds.session_end, IMPORT_TIMEOUT_S),
    ):
        lines += [
            "",
            f"[[hooks.{event}]]",
            "",
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {_toml_str(command)}",
            f"timeout = {timeout}",
        ]
    return "\n".join([*lines, _END]) + "\n"


def _find_block(path: Path, text: str) -> tuple[int, int, str] | None:
    """``(start, end, begin marker line)`` of cw's block (``end`` past its last newline)."""
    starts = [m.start() for m in re.finditer(r"(?m)^# >>> cw: ", text)]
    if not starts:
        return None
    start = starts[0]
    end_at = text.find("\n" + _END, start)
    if len(starts) > 1 or end_at < 0:
        raise Conflict(
            f"cw's block in {path} is damaged (markers missing or repeated): fix by hand"
        )
    end = end_at + 1 + len(_END)
    if text.startswith("\n", end):
        end += 1
    return start, end, text[start : text.find("\n", start)]


def _codex_remove(path: Path, text: str) -> str | None:
    """The text without cw's block and the separator it added; None: delete the file."""
    found = _find_block(path, text)
    if found is None:
        return text
    start, end, begin = found
    head, tail = text[:start], text[end:]
    if begin == _BEGIN_NEW and not head and not tail:
        return None
    separator = "\n\n" if begin == _BEGIN_NOEOL else "\n"
    if begin != _BEGIN_NEW and head.endswith(separator):
        head = head[: -len(separator)]
    return head + tail


def _toml_parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it first") from None


def _codex_install(path: Path, before: str | None, cmds: Commands, project: str) -> str:
    text = before or ""
    found = _find_block(path, text)
    outside = _codex_remove(path, text) or ""
    if "cw" in _toml_parse(path, outside).get("mcp_servers", {}):
        raise Conflict(f"{path} already registers an MCP server `cw` (outside cw's block)")
    if found:
        start, end, begin = found
        after = text[:start] + _codex_block(cmds, project, begin) + text[end:]
    elif before is None:
        after = _codex_block(cmds, project, _BEGIN_NEW)
    elif not text:
        after = _codex_block(cmds, project, _BEGIN)
    elif text.endswith("\n"):
        after = text + "\n" + _codex_block(cmds, project, _BEGIN)
    else:
        after = text + "\n\n" + _codex_block(cmds, project, _BEGIN_NOEOL)
    try:
        tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:
        raise Conflict(
            f"adding cw's hooks to {path} would make it invalid TOML ({exc}): it probably sets "
            "hooks.SessionStart, hooks.UserPromptSubmit or hooks.Stop as an inline array; move "
            "those to [[hooks.<Event>]] tables (or to hooks.json) and retry"
        ) from None
    return after


def _codex_block_data(path: Path, text: str | None) -> dict[str, Any] | None:
    found = _find_block(path, text) if text else None
    if text is None or found is None:
        return None
    return _toml_parse(path, text[found[0] : found[1]])


def _codex_project(data: dict[str, Any] | None) -> str | None:
    args = (data or {}).get("mcp_servers", {}).get("cw", {}).get("args", [])
    return args[args.index("--project") + 1] if "--project" in args[:-1] else None


def _codex_entries(data: dict[str, Any] | None) -> list[dict[str, Any]]:
    if data is None:
        return []
    out = []
    server = data.get("mcp_servers", {}).get("cw")
    if server:
        out.append(
            {"event": "mcp_servers.cw", "command": shlex.join([server["command"], *server["args"]])}
        )
    for event, groups in data.get("hooks", {}).items():
        out += [{"event": event, "command": h["command"]} for g in groups for h in g["hooks"]]
    return out


# -- pi: one extension file -----------------------------------------------------------------------

_PI_HEADER = "// cw: added by `cw hooks install pi`; `cw hooks uninstall pi` deletes this file."

_PI_TEMPLATE = """{header}
// Before each prompt, cw's hook client may return a frozen historical hint and the turn's memory
// block (hint first); they are injected as one message right after the prompt and persisted in
// the session, so the bytes earlier turns were sent with never change. After
// each answer (in the background) and when the session shuts down, the session file is imported
// into cw. See cw's docs/hosts.md.
import {{ spawn }} from "node:child_process";

const PYTHON = {python};

function run(args, payload, timeoutMs) {{
  return new Promise((resolve) => {{
    const child = spawn(PYTHON, args, {{ stdio: ["pipe", "pipe", "ignore"], timeout: timeoutMs }});
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => resolve(""));
    child.on("close", (code) => resolve(code === 0 ? out : ""));
    child.stdin.on("error", () => {{}});
    child.stdin.end(JSON.stringify(payload));
  }});
}}

function payload(event, ctx, extra) {{
  return {{
    hook_event_name: event,
    host: "pi",
    session_id: ctx.sessionManager.getSessionId(),
    transcript_path: ctx.sessionManager.getSessionFile() ?? null,
    cwd: ctx.cwd,
    ...extra,
  }};
}}

export default function (pi) {{
  pi.on("before_agent_start", async (event, ctx) => {{
    const hint = await run(
      ["-m", {hint_module}],
      payload("UserPromptSubmit", ctx, {{ prompt: event.prompt }}),
      {hint_ms},
    );
    if (!hint.trim()) return;
    return {{ message: {{ customType: "cw-hint", content: hint, display: true }} }};
  }});

  const IMPORT = ["-m", {import_module}, "session-end"];

  pi.on("agent_end", (_event, ctx) => {{
    if (!ctx.sessionManager.getSessionFile()) return;
    void run(IMPORT, payload("Stop", ctx, {{}}), {import_ms}); // not awaited: never delays pi
  }});

  pi.on("session_shutdown", async (_event, ctx) => {{
    if (!ctx.sessionManager.getSessionFile()) return;
    await run(IMPORT, payload("SessionEnd", ctx, {{}}), {import_ms});
  }});
}}
"""


def _pi_extension(cmds: Commands) -> str:
    return _PI_TEMPLATE.format(
        header=_PI_HEADER,
        python=json.dumps(cmds.python),
        hint_module=json.dumps(HINT_MODULE),
        import_module=json.dumps(IMPORT_MODULE),
        hint_ms=HINT_TIMEOUT_S * 1000,
        import_ms=IMPORT_TIMEOUT_S * 1000,
    )


def _pi_entries(text: str | None) -> list[dict[str, Any]]:
    found = re.search(r"(?m)^const PYTHON = (.*);$", text or "")
    if not text or not text.startswith(_PI_HEADER) or not found:
        return []
    cmds = Commands.for_python(json.loads(found.group(1)))
    return [
        {"event": "before_agent_start", "command": cmds.hint},
        {"event": "session_shutdown", "command": cmds.session_end},
    ]


def _pi_owned(path: Path, text: str | None) -> bool:
    if text is None:
        return False
    if not text.startswith(_PI_HEADER):
        raise Conflict(f"{path} exists and was not written by cw; choose another --settings path")
    return True


# -- the operations -------------------------------------------------------------------------------


def plan_install(
    host: str,
    path: Path | None = None,
    *,
    python: str | None = None,
    project: str | None = None,
) -> Change:
    """What ``cw hooks install HOST`` writes. ``project`` binds Codex's MCP server (default: the
    project name cw's importers give the current directory)."""
    _check_host(host)
    path = path or default_path(host)
    cmds = Commands.for_python(python)
    before = _read(path)
    if host == "claude-code":
        return _claude_install(path, before, cmds)
    if host == "pi":
        _pi_owned(path, before)
        return Change(host, path, before, _pi_extension(cmds))
    project = project or _codex_project(_codex_block_data(path, before))
    if project is None:
        from cwcore.importers.common import project_from_cwd

        project = project_from_cwd(os.getcwd()) or "default"
    after = _codex_install(path, before, cmds, project)
    return Change(
        host, path, before, after, (f"codex's MCP server `cw` serves project {project!r}",)
    )


def plan_uninstall(host: str, path: Path | None = None) -> Change:
    """What ``cw hooks uninstall HOST`` leaves: the file without cw's entries (or no file)."""
    _check_host(host)
    path = path or default_path(host)
    before = _read(path)
    if before is None:
        return Change(host, path, None, None)
    if host == "claude-code":
        return _claude_uninstall(path, before)
    if host == "codex":
        after = _codex_remove(path, before)
    else:
        after = None if _pi_owned(path, before) else before
    return Change(host, path, before, after)


def show(host: str, path: Path | None = None, *, python: str | None = None) -> dict[str, Any]:
    """Whether cw's hooks are installed for ``host``, which entries are there, and whether they
    match what ``install`` would write now (same python)."""
    _check_host(host)
    path = path or default_path(host)
    text = _read(path)
    project = None
    if host == "claude-code":
        entries = _claude_entries(path, text)
    elif host == "codex":
        data = _codex_block_data(path, text)
        entries, project = _codex_entries(data), _codex_project(data)
    else:
        entries = _pi_entries(text)
    current = bool(entries) and not plan_install(host, path, python=python, project=project).changed
    return {
        "host": host,
        "path": str(path),
        "exists": text is not None,
        "installed": bool(entries),
        "current": current,
        "entries": entries,
    }


def apply(change: Change) -> None:
    """Write (or delete) the file atomically; nothing happens when nothing changes."""
    if not change.changed:
        return
    if change.backup is not None:
        copy_file, copy_text = change.backup
        _write(copy_file, copy_text, owner_only=True)
    _write(change.path, change.after)


def _write(path: Path, text: str | None, *, owner_only: bool = False) -> None:
    """Replace ``path`` atomically, keeping its mode; ``owner_only`` (a copy kept under CW_HOME)
    makes it and any folder created for it the owner's alone, as everything there is."""
    if text is None:
        path.unlink(missing_ok=True)
        return
    if owner_only:
        from cwcore import private

        with private.owner_only():
            path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the session-end hook -------------------------------------------------------------------------


def session_end(payload_text: str) -> None:
    """Import the transcript a host's session-end payload names (``cw sync`` without one)."""
    from cwcore.api import Archive
    from cwcore.daemon import client

    client.settings_notice = None  # a host may show a hook's stderr to the user

    try:
        payload = json.loads(payload_text) if payload_text.strip() else {}
    except json.JSONDecodeError:
        payload = {}
    transcript = payload.get("transcript_path") if isinstance(payload, dict) else None
    with Archive.open() as archive:
        if isinstance(transcript, str) and Path(transcript).is_file():
            archive.import_paths([transcript])
        else:
            archive.sync()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cwcore.hosts.hooks session-end``: never fails the host's session."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["session-end"]:
        print("usage: python -m cwcore.hosts.hooks session-end < payload.json", file=sys.stderr)
        return 2
    try:
        session_end(sys.stdin.read())
    except Exception as exc:  # a hook must not break the host: report and carry on
        print(f"cw session-end: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
