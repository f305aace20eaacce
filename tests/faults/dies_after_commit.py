"""A daemon service for the fault tests: the real engine, except that the first write named in
``CW_TEST_DIE_AFTER`` (a method, e.g. ``supersede``) kills the daemon once it has committed and
before it answers, as ``kill -9`` would at that instant.

It dies only while the file ``CW_TEST_DIE_MARKER`` does not exist (and creates it first), so the
daemon a client then starts to retry on carries on normally. Loaded with
``CW_DAEMON_SERVICE=tests.faults.dies_after_commit:make_service`` (the repository on its
PYTHONPATH).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from cwcore.engine import Emit, Engine
from cwcore.methods import TABLE


class DiesAfterCommit(Engine):
    def call(
        self, method: str, params: dict[str, Any], emit: Emit, cancel: threading.Event
    ) -> dict[str, Any]:
        result = super().call(method, params, emit, cancel)
        marker = Path(os.environ["CW_TEST_DIE_MARKER"])
        if method == os.environ.get("CW_TEST_DIE_AFTER") and not marker.exists():
            marker.write_text(method)
            os._exit(9)  # committed, not answered: no drain, no replay cache survives
        return result


def make_service(home: Path) -> Engine:
    return DiesAfterCommit(home, TABLE)
