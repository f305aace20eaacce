"""The core never imports a face library (STYLE.md #2): checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("typer", "textual", "rich", "cwtui")


def test_cwcore_imports_no_face_library() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import cwcore\n"
        "for info in pkgutil.walk_packages(cwcore.__path__, 'cwcore.'):\n"
        "    if info.name.endswith('__main__'):\n"
        "        continue\n"
        "    importlib.import_module(info.name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"cwcore pulled in: {out.stdout.strip()}"
