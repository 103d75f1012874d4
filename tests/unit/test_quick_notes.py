"""The loaded-directory cache's notes of directories made faster than a copy is worth: what makes
one known, and what makes it unknown again."""

import os
import time

from claimlab import datacache
from claimlab.servers.initcache import evict_least_recent


def test_a_note_is_known_while_it_stays_under_the_threshold(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 1.0)
    assert not datacache.known_quick("k1")
    datacache.note_quick("k1", 0.4)
    assert datacache.known_quick("k1") and not datacache.known_quick("k2")
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.3)    # a threshold lowered since: worth a copy now
    assert not datacache.known_quick("k1")
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 1.0)
    datacache.note_quick("k1", 2.5)                      # made slowly since: the later note wins
    assert not datacache.known_quick("k1")


def test_no_key_no_note_and_a_damaged_note_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    datacache.note_quick(None, 0.1)
    assert not datacache.known_quick(None) and not (tmp_path / "datadirs").exists()
    datacache.note_quick("k1", 0.1)
    (tmp_path / "datadirs" / datacache.QUICK_DIR / "k1").write_text("half")
    assert not datacache.known_quick("k1")
    assert [p.name for p in (tmp_path / "datadirs" / datacache.QUICK_DIR).iterdir()] == ["k1"]   # no stray temp


def test_notes_are_not_cache_entries(tmp_path, monkeypatch):
    """Eviction and `has` see entries only: a note never counts as a cached directory."""
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    root = tmp_path / "datadirs"
    datacache.note_quick("k1", 0.1)
    assert not datacache.has("k1")
    for age, name in ((300, datacache.QUICK_DIR), (200, "older"), (100, "newer")):
        (root / name / "data").mkdir(parents=True, exist_ok=True)
        (root / name / "data" / "ibdata1").write_bytes(b"\1" * 4096)
        os.utime(root / name, (time.time() - age,) * 2)
    evict_least_recent(root, 0)      # the oldest entry goes, the newest stays, notes stay
    assert sorted(p.name for p in root.iterdir()) == sorted([datacache.QUICK_DIR, "newer"])
    assert datacache.known_quick("k1")
