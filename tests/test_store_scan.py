"""``Store.scan_prefixes``: one iterator for many prefixes, the same rows as a scan of each."""

from __future__ import annotations

from pathlib import Path

from cwcore.store.rocks import Store
from tests.support import open_scans


def test_scan_prefixes_equals_a_scan_of_each(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        batch = store.batch()
        for key in (b"a1", b"a2", b"ab", b"b", b"k", b"k1", b"k10", b"k2", b"z\xff", b"z\xff\x00"):
            batch.put("windows", key, key[::-1])
        store.commit(batch)
        prefixes = [b"k1", b"a", b"missing", b"k", b"", b"z\xff", b"k1"]
        assert store.scan_prefixes("windows", prefixes) == [
            list(store.scan("windows", p)) for p in prefixes
        ]
        assert store.scan_prefixes("windows", []) == []
        assert open_scans(store) == 0  # the iterator is released
