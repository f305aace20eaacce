"""What the per-format tests need to know about each newer format's fixtures: where its producer
writes the fixture under a home (so ``cw sync`` finds it), and how a live session grows (an
assistant message appended to its last turn, which must give that turn a new version)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.importers.golden_support import FIXTURES


@dataclass(frozen=True)
class Case:
    format: str
    fixture: str  # relative to FIXTURES: a file, or a folder copied whole
    place: str  # where it goes under the home
    grow: Callable[[Path], None]  # append to the placed copy (given the placed main file)
    main: str = ""  # the session file inside a copied folder
    project: str = ""  # the project folder (under the home) the syncProjects setting names

    def install(self, home: Path) -> Path:
        source = FIXTURES / self.fixture
        target = home / self.place
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
            return target / self.main
        shutil.copy(source, target)
        return target


def append_jsonl(path: Path, *rows: dict[str, object]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def _grow_copilot(path: Path) -> None:
    append_jsonl(
        path,
        {
            "type": "assistant.message",
            "data": {"messageId": "m-9", "content": "The failing test expects HALF_EVEN."},
            "id": "e0000099",
            "timestamp": "2026-03-05T09:01:20.000Z",
            "parentId": "e0000017",
        },
    )


def _grow_opencode_db(path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        sid = conn.execute("SELECT id FROM session WHERE parent_id IS NULL").fetchone()[0]
        data = '{"role":"assistant","time":{"created":1772701330000},"modelID":"claude-sonnet-4-5"}'
        conn.execute(
            "INSERT INTO message VALUES ('msg_c5a0f1000020Grown0000020', ?, 1772701330000, "
            "1772701330000, ?)",
            (sid, data),
        )
        conn.execute(
            "INSERT INTO part VALUES ('prt_c5a0f1000021Grown0000021', "
            "'msg_c5a0f1000020Grown0000020', ?, 1772701331000, 1772701331000, ?)",
            (sid, '{"type":"text","text":"The LRU test passes now."}'),
        )
    conn.close()


def _grow_opencode_tree(path: Path) -> None:
    storage = path.parent.parent.parent
    sid = path.stem
    mid = "msg_b0100000009aLegacyTree0009"
    message = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": 1760000095000}}
    part = {"id": "prt_b010000000aaLegacyTree000a", "sessionID": sid, "messageID": mid}
    (storage / "message" / sid / f"{mid}.json").write_text(json.dumps(message, indent=2))
    (storage / "part" / mid).mkdir(parents=True)
    part.update(type="text", text="Also documented the flag in README.")
    (storage / "part" / mid / f"{part['id']}.json").write_text(json.dumps(part, indent=2))


def _grow_cursor_jsonl(path: Path) -> None:
    text = "Also added a test for the zoom-out case."
    append_jsonl(
        path, {"role": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    )


def _grow_cursor_text(path: Path) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write("[Tool call] Shell\n  command: npm run export -- --dry-run\n")


QWEN_SESSION = "9a7e3c10-5b2d-4f6e-8a1c-00000000a001"
QWEN = f"qwen/projects/-home-dev-src-ledger-api/chats/{QWEN_SESSION}.jsonl"


def _grow_qwen(path: Path) -> None:
    append_jsonl(
        path,
        {
            "uuid": "u-0011",
            "parentUuid": "u-0010",
            "sessionId": QWEN_SESSION,
            "cwd": "/home/dev/src/ledger-api",
            "version": "0.2.1",
            "timestamp": "2026-03-06T08:01:40.000Z",
            "type": "assistant",
            "message": {"role": "model", "parts": [{"text": "I'll include the import line."}]},
        },
    )


def _grow_goose_db(path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp) "
            "VALUES ('20260307_1', 'assistant', ?, 1772877710)",
            ('[{"type":"text","text":"Summary kept: certs still pending the Vault login."}]',),
        )
    conn.close()


def _grow_goose_jsonl(path: Path) -> None:
    text = "Seconds are optional now; added a test for 14:22."
    append_jsonl(
        path,
        {
            "id": "msg_legacy_4",
            "role": "assistant",
            "created": 1749565370,
            "content": [{"type": "text", "text": text}],
        },
    )


def _grow_crush(path: Path) -> None:
    import sqlite3

    parts = '[{"type":"text","data":{"text":"I will add the waitReconnect helper first."}}]'
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO messages VALUES ('m-crush-0008', '5d3c1b2a-0000-4e00-9000-00000000c001', "
            "'assistant', ?, 'claude-sonnet-4-5', 1772964120, 1772964120, NULL, 'anthropic', 0)",
            (parts,),
        )
    conn.close()


DROID = "droid/-home-dev-src-ledger-api"
DROID_SESSION = "b7e2f0c4-1d3a-4b5c-9e8f-00000000d001"


def _grow_droid(path: Path) -> None:
    text = "Added the middleware; retries with the same key now return the first response."
    append_jsonl(
        path,
        {
            "type": "message",
            "id": "dm-0006",
            "timestamp": "2026-03-09T14:01:10.000Z",
            "parentId": "dm-0005",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        },
    )


def _grow_aider(path: Path) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write("\n> Applied edit to cli.py\n> Commit 9b8e7f1 feat: add --currency flag\n")


KIRO_SESSION = "e4d3c2b1-9a8f-4e7d-8c6b-00000000e001"


def _grow_kiro_jsonl(path: Path) -> None:
    text = "The lockfile is missing: run `npm install` once to create it, then rebuild."
    data = {"message_id": "ka-4", "content": [{"kind": "text", "data": text}]}
    append_jsonl(path, {"kind": "AssistantMessage", "data": data})


def _grow_kiro_db(path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        (value,) = conn.execute("SELECT value FROM conversations_v2").fetchone()
        state = json.loads(value)
        reply = {"message_id": "qa-3", "content": "It writes to s3://ops-backups."}
        state["history"].append({"user": {"content": {}}, "assistant": {"Response": reply}})
        conn.execute("UPDATE conversations_v2 SET value = ?", (json.dumps(state),))
    conn.close()


OPENCLAW = "openclaw/agents/main/sessions/0c1a2b3c-4d5e-4f60-8a9b-00000000f001.jsonl"


def _grow_openclaw(path: Path) -> None:
    text = "Want a reminder 30 minutes before the dentist?"
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    append_jsonl(
        path,
        {
            "type": "message",
            "id": "e6",
            "parentId": "e5",
            "timestamp": "2026-03-13T07:30:09.000Z",
            "message": message,
        },
    )


def _grow_cursor_global(path: Path) -> None:
    import sqlite3

    composer = "a1b2c3d4-0000-4000-8000-00000000cc01"
    key = f"composerData:{composer}"
    conn = sqlite3.connect(path)
    with conn:
        (value,) = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()
        data = json.loads(value)
        data["fullConversationHeadersOnly"].append({"bubbleId": "bb-05", "type": 2})
        bubble = {
            "type": 2,
            "bubbleId": "bb-05",
            "text": "Done: limit defaults to 50, capped at 200.",
        }
        conn.execute("UPDATE cursorDiskKV SET value = ? WHERE key = ?", (json.dumps(data), key))
        conn.execute(
            "INSERT INTO cursorDiskKV VALUES (?, ?)",
            (f"bubbleId:{composer}:bb-05", json.dumps(bubble)),
        )
    conn.close()


def _grow_cursor_workspace(path: Path) -> None:
    import sqlite3

    key = "workbench.panel.aichat.view.aichat.chatdata"
    conn = sqlite3.connect(path)
    with conn:
        (value,) = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (key,)).fetchone()
        data = json.loads(value)
        text = "I removed the first read; the tests still pass."
        data["tabs"][0]["bubbles"].append({"id": "cb-3", "type": "ai", "text": text})
        conn.execute("UPDATE ItemTable SET value = ? WHERE key = ?", (json.dumps(data), key))
    conn.close()


ZED_THREAD = "9b2e4f10-7c3d-4a5e-8f60-000000002ed1"


def _grow_zed(path: Path) -> None:
    import sqlite3

    import zstandard

    conn = sqlite3.connect(path)
    with conn:
        (blob,) = conn.execute("SELECT data FROM threads WHERE id = ?", (ZED_THREAD,)).fetchone()
        thread = json.loads(zstandard.ZstdDecompressor().decompressobj().decompress(blob))
        text = "I also added a test for capacity 0."
        thread["messages"].append({"Agent": {"content": [{"Text": text}], "tool_results": {}}})
        data = zstandard.ZstdCompressor(level=3).compress(json.dumps(thread).encode())
        conn.execute(
            "UPDATE threads SET data = ?, updated_at = ? WHERE id = ?",
            (data, "2026-03-14T09:21:00+00:00", ZED_THREAD),
        )
    conn.close()


def _grow_openhands(path: Path) -> None:
    text = "The regression test is in tests/test_city_names.py and passes."
    eid = "0c5e7a10-3b2d-4e6f-9a8b-00000000e013"
    event = {
        "kind": "MessageEvent",
        "id": eid,
        "timestamp": "2026-03-16T10:02:30.000000",
        "source": "agent",
        "llm_message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "llm_response_id": "chatcmpl-oh-0006",
    }
    (path.parent / "events" / f"event-00013-{eid}.json").write_text(json.dumps(event))


def _grow_openhands_v0(path: Path) -> None:
    text = "Run pip install -r requirements.txt to pick up the pin."
    event = {
        "id": 10,
        "timestamp": "2025-07-21T14:02:40.000000",
        "source": "agent",
        "message": text,
        "action": "message",
        "args": {"content": text, "wait_for_response": True},
    }
    (path.parent / "10.json").write_text(json.dumps(event))


def _grow_amp(path: Path) -> None:
    thread = json.loads(path.read_text(encoding="utf-8"))
    text = "Once it is tagged, `git tag -v v0.9.1` shows the key it was signed with."
    thread["messages"].append(
        {"role": "assistant", "messageId": 12, "content": [{"type": "text", "text": text}]}
    )
    path.write_text(json.dumps(thread, indent=2) + "\n", encoding="utf-8")


OPENHANDS = "openhands/conversations/5a7c1e2f9d3b4c6a8e0f1a2b3c4d0b01"
OPENHANDS_V0 = "openhands/sessions/a41f0c2e9b7d4e58"
AMP = "amp/threads/T-7e4b2a19-5c3d-4f8e-9a61-00000000a301.json"

CLINE_TASK = "cline/saoudrizwan.claude-dev/tasks/1772874000000"
ROO_TASK = "roo-code/rooveterinaryinc.roo-cline/tasks/7f3c2a10-5e4d-4b2a-9c1e-00000000r001"


def _grow_cline(path: Path) -> None:
    """Cline rewrites the whole array (one line) when a message is added."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    text = "The empty-string check is in; `parse_duration('')` raises ValueError."
    entries.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
    path.write_text(json.dumps(entries, separators=(",", ":")), encoding="utf-8")


def _grow_roo(path: Path) -> None:
    entries = json.loads(path.read_text(encoding="utf-8"))
    text = "I'll rename the response field to `balance_minor` instead."
    entries.append(
        {"role": "assistant", "content": [{"type": "text", "text": text}], "ts": 1772960535000}
    )
    path.write_text(json.dumps(entries, separators=(",", ":")), encoding="utf-8")


VSCODE_WORKSPACE = "vscode-copilot/User/workspaceStorage/5b1e9c2f7a3d4e6f8091a2b3c4d5e6f7"
VSCODE_SESSION = "2c9f4e1a-7b3d-4c5e-9f10-00000000vc01"
VSCODE_EMPTY = "vscode-copilot/User/globalStorage/emptyWindowChatSessions"
VSCODE_EMPTY_SESSION = "8e7d6c5b-4a39-4281-9f00-00000000vc02"


def _grow_vscode_json(path: Path) -> None:
    """VS Code rewrites the session file; the last response gains a part."""
    session = json.loads(path.read_text(encoding="utf-8"))
    text = " Rounded to two decimals; the units tests pass."
    session["requests"][-1]["response"].append({"value": text})
    path.write_text(json.dumps(session, indent=2), encoding="utf-8")


def _grow_vscode_jsonl(path: Path) -> None:
    """A mutation log grows by one line: a part pushed to the last response."""
    text = "Use it to move a branch that was cut from the wrong base."
    edit = {"kind": "textEditGroup", "uri": {"path": "/tmp/notes.md"}, "edits": [], "done": True}
    append_jsonl(path, {"kind": 2, "k": ["requests", 0, "response"], "v": [edit, {"value": text}]})


CURSOR_WORKSPACE = "cursor/User/workspaceStorage/8f3e2a1b0c9d8e7f6a5b4c3d2e1f0a9b"
CURSOR = "cursor/projects/home-dev-src-tilemap/agent-transcripts"
CURSOR_JSONL = "7d1c2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
CURSOR_TEXT = "0b9e8d7c-6f5a-4e3d-9c2b-1a0f9e8d7c6b.txt"

CASES: list[Case] = [
    Case(
        "copilot",
        "copilot/3c0f11e2-7a4b-4d8e-9f10-0000000000c1",
        ".copilot/session-state/3c0f11e2-7a4b-4d8e-9f10-0000000000c1",
        _grow_copilot,
        main="events.jsonl",
    ),
    Case(
        "opencode", "opencode/opencode.db", ".local/share/opencode/opencode.db", _grow_opencode_db
    ),
    Case(
        "opencode",
        "opencode/storage",
        ".local/share/opencode/storage",
        _grow_opencode_tree,
        main="session/global/ses_2f00aa11bffeLegacyTree0001.json",
    ),
    Case("kilo", "kilo/kilo.db", ".local/share/kilo/kilo.db", _grow_opencode_db),
    Case(
        "cursor",
        f"{CURSOR}/{CURSOR_JSONL}",
        f".{CURSOR}/{CURSOR_JSONL}",
        _grow_cursor_jsonl,
        main=f"{CURSOR_JSONL}.jsonl",
    ),
    Case("cursor", f"{CURSOR}/{CURSOR_TEXT}", f".{CURSOR}/{CURSOR_TEXT}", _grow_cursor_text),
    Case(
        "cursor",
        "cursor/User/globalStorage/state.vscdb",
        ".config/Cursor/User/globalStorage/state.vscdb",
        _grow_cursor_global,
    ),
    Case(
        "cursor",
        CURSOR_WORKSPACE,
        ".config/Cursor/User/workspaceStorage/8f3e2a1b0c9d8e7f6a5b4c3d2e1f0a9b",
        _grow_cursor_workspace,
        main="state.vscdb",
    ),
    Case("qwen", QWEN, f".{QWEN}", _grow_qwen),
    Case("goose", "goose/sessions.db", ".local/share/goose/sessions/sessions.db", _grow_goose_db),
    Case(
        "goose",
        "goose/legacy/20250610_142233.jsonl",
        ".goose/sessions/20250610_142233.jsonl",
        _grow_goose_jsonl,
    ),
    Case("crush", "crush/.crush/crush.db", ".crush/crush.db", _grow_crush),
    Case(
        "droid",
        DROID,
        ".factory/sessions/-home-dev-src-ledger-api",
        _grow_droid,
        main=f"{DROID_SESSION}.jsonl",
    ),
    Case(
        "aider",
        "aider/invoice-cli",
        "src/invoice-cli",
        _grow_aider,
        main=".aider.chat.history.md",
        project="src/invoice-cli",
    ),
    Case(
        "kiro",
        "kiro/sessions/cli",
        ".kiro/sessions/cli",
        _grow_kiro_jsonl,
        main=f"{KIRO_SESSION}.jsonl",
    ),
    Case("kiro", "kiro/data.db", ".local/share/kiro-cli/data.sqlite3", _grow_kiro_db),
    Case("openclaw", OPENCLAW, f".{OPENCLAW}", _grow_openclaw),
    Case(
        "cline",
        CLINE_TASK,
        f".config/Code/User/globalStorage/{CLINE_TASK.removeprefix('cline/')}",
        _grow_cline,
        main="api_conversation_history.json",
    ),
    Case(
        "cline",
        CLINE_TASK,
        f".cline/data/tasks/{CLINE_TASK.rsplit('/', 1)[1]}",
        _grow_cline,
        main="api_conversation_history.json",
    ),
    Case(
        "roo-code",
        ROO_TASK,
        f".config/Code/User/globalStorage/{ROO_TASK.removeprefix('roo-code/')}",
        _grow_roo,
        main="api_conversation_history.json",
    ),
    Case(
        "vscode-copilot",
        VSCODE_WORKSPACE,
        ".config/Code/User/workspaceStorage/5b1e9c2f7a3d4e6f8091a2b3c4d5e6f7",
        _grow_vscode_json,
        main=f"chatSessions/{VSCODE_SESSION}.json",
    ),
    Case(
        "vscode-copilot",
        f"{VSCODE_EMPTY}/{VSCODE_EMPTY_SESSION}.jsonl",
        f".config/Code - Insiders/User/globalStorage/emptyWindowChatSessions/"
        f"{VSCODE_EMPTY_SESSION}.jsonl",
        _grow_vscode_jsonl,
    ),
    Case("zed", "zed/threads.db", ".local/share/zed/threads/threads.db", _grow_zed),
    Case("openhands", OPENHANDS, f".{OPENHANDS}", _grow_openhands, main="base_state.json"),
    Case("openhands", OPENHANDS_V0, f".{OPENHANDS_V0}", _grow_openhands_v0, main="events/0.json"),
    Case("amp", AMP, f".local/share/{AMP}", _grow_amp),
]


def build_sqlite(sql: Path, db: Path) -> Path:
    """The fixture database a ``.sql`` script describes (rebuilt from scratch)."""
    import sqlite3

    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.executescript(sql.read_text(encoding="utf-8"))
        conn.commit()
    finally:
        conn.close()
    return db


def main() -> None:
    for sql in sorted(FIXTURES.rglob("*.sql")):
        # x.sql builds x.db; state.vscdb.sql builds state.vscdb
        target = sql.with_suffix("") if "." in sql.stem else sql.with_suffix(".db")
        print("built", build_sqlite(sql, target).relative_to(FIXTURES))


if __name__ == "__main__":
    main()
