"""Small builders shared by tests."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

# The Hypothesis profile of this run: "fast" (make test) or "thorough" (make test-slow, which
# runs every property test again); tests/conftest.py loads it.
HYPOTHESIS_PROFILE = os.environ.get("CW_HYPOTHESIS_PROFILE", "fast")


def examples(thorough: int) -> int:
    """The example count of a property test that runs ``thorough`` examples in the thorough
    profile: a fifth of it, at least 20, in the fast one."""
    if HYPOTHESIS_PROFILE == "thorough":
        return thorough
    return max(20, thorough // 5)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def user_turns(
    texts: list[str], session: str = "s", sessions: list[str] | None = None
) -> list[dict[str, Any]]:
    """A cw-jsonl session of user messages only, one a minute from 10:00 on 2026-11-10, so
    each message is its own turn: one document (and, short, one window) per text. ``sessions``:
    each text's own session instead (one per text)."""
    return [
        {
            "session": sessions[i] if sessions is not None else session,
            "id": f"m{i}",
            "role": "user",
            "text": text,
            "project": "p",
            "timestamp": f"2026-11-10T10:{i:02d}:00Z",
        }
        for i, text in enumerate(texts)
    ]


def conversation(
    session: str, turns: int, *, project: str = "proj", start_minute: int = 0
) -> list[dict[str, Any]]:
    """A cw-jsonl session: ``turns`` exchanges of user question + assistant answer."""
    rows: list[dict[str, Any]] = []
    for i in range(turns):
        minute = start_minute + i
        stamp = f"2026-11-01T{10 + minute // 60:02d}:{minute % 60:02d}:00Z"
        rows.append(
            {
                "session": session,
                "id": f"u{i}",
                "role": "user",
                "project": project,
                "text": f"question {i} about parseConfig and ERR_{i:04d}",
                "timestamp": stamp,
            }
        )
        rows.append(
            {
                "session": session,
                "id": f"a{i}",
                "role": "assistant",
                "text": f"answer {i}: edit src/config/load_{i}.py",
                "timestamp": stamp,
            }
        )
    return rows


@contextlib.contextmanager
def real_daemon_env(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch, **extra: str
) -> Iterator[dict[str, str]]:
    """The environment of a process that talks to a real daemon of ``cw_home`` (no
    CW_EMBEDDED, a short private runtime directory, the default service, ``extra`` variables);
    the daemon it started is stopped (TERM, then KILL) and the directory removed after."""
    from cwcore.daemon.client import wait_for_exit
    from cwcore.daemon.paths import daemon_paths
    from cwcore.daemon.runner import read_pid

    runtime = Path(tempfile.mkdtemp(prefix="cwt", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("CW_DAEMON_SERVICE", raising=False)
    env = {k: v for k, v in os.environ.items() if k != "CW_EMBEDDED"}
    env.update(PYTHONPATH=str(REPO), **extra)
    try:
        yield env
    finally:
        pid = read_pid(daemon_paths(cw_home).pidfile)
        if pid and not wait_for_exit(pid, 0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            if not wait_for_exit(pid, 10):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                wait_for_exit(pid, 5)
        shutil.rmtree(runtime, ignore_errors=True)


class HomeCache:
    """CW_HOME directories built once per test process and copied, closed, into tests.

    ``clone(key, build, dest)`` runs ``build(home)`` the first time a key is asked for (``home``
    is a fresh directory outside every test's tmp_path; ``build`` must close every engine it
    opens), then copies that directory to ``dest``. Each test owns its copy, so it may write;
    the built original is never opened again.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._built: dict[str, Path] = {}

    def clone(self, key: str, build: Callable[[Path], None], dest: Path) -> Path:
        source = self._built.get(key)
        if source is None:
            source = self._root / key / "cw-home"
            source.parent.mkdir(parents=True)
            try:
                build(source)
            except BaseException:
                # The next test asking for this key builds again and fails with the build's own
                # error, not with FileExistsError from the directory left behind.
                shutil.rmtree(source.parent, ignore_errors=True)
                raise
            self._built[key] = source
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
        return dest
