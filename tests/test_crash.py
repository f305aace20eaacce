"""kill -9 an importing process at random points: every acknowledged document survives intact.

Each trial starts ``cw import --json`` in a real subprocess, reads the acknowledgement stream,
kills the process with SIGKILL right after a random number of acknowledgements, then reopens the
store (WAL recovery) and checks that every acknowledged document has its head, manifest, every
chunk, and its outbox entry. Later trials import into the same store, so recovery from earlier
kills is exercised too.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cwcore.store import keys
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store
from tests.helpers import conversation, write_jsonl

TRIALS = 20


def _source(tmp_path: Path) -> Path:
    rows = []
    for s in range(600):
        rows += conversation(f"sess-{s:04d}", 6)
    return write_jsonl(tmp_path / "big.jsonl", rows)


def _run_and_kill(src: Path, env: dict[str, str], after_acks: int) -> list[dict]:
    """Run an import and SIGKILL it right after its ``after_acks``-th acknowledgement (the kill
    then lands wherever the process is in its next batch), or let it finish."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cwtui.cli", "import", str(src), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    acks: list[dict] = []
    reached = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            body = json.loads(line)
            if "documentId" in body:
                acks.append(body)
                if len(acks) >= after_acks:
                    reached.set()
        reached.set()

    thread = threading.Thread(target=reader)
    thread.start()
    reached.wait(timeout=120)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    thread.join()
    return acks


# Slow: crash trials, each a subprocess import killed with SIGKILL and reopened.
@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_document(tmp_path: Path) -> None:
    src = _source(tmp_path)
    home = tmp_path / "home"
    env = {**os.environ, "CW_HOME": str(home), "CW_EMBEDDED": "1"}
    rng = random.Random(20261129)
    acknowledged: dict[tuple[str, int], dict] = {}
    killed_mid_stream = 0
    for _ in range(TRIALS):
        acks = _run_and_kill(src, env, rng.randint(20, 150))
        for ack in acks:
            acknowledged[(ack["documentId"], ack["version"])] = ack
        killed_mid_stream += bool(acks)
        with Store(home / "store") as store:
            reader = Reader(store)
            outboxed = {
                (e["documentId"], e["version"]) for _, e in reader.outbox() if e["op"] == "index"
            }
            for (doc_id, version), ack in acknowledged.items():
                manifest = reader.manifest(doc_id, version)
                assert manifest["session"] == ack["sessionId"]
                text = reader.text(manifest)  # every chunk present
                assert "question" in text
                assert (doc_id, version) in outboxed
                assert store.get("ordinals", keys.ORDINAL.encode(manifest["ordinal"])) is not None
    assert killed_mid_stream == TRIALS
