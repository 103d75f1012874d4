"""What a failed server start says: the cause first, and what to do about a full disk."""

from claimlab.servers.local import _tail, disk_hint

FULL_DISK = """\
2026-11-29 20:08:35 0 [ERROR] InnoDB: preallocating 100663296 bytes for file ./ib_logfile101 failed with error 28
2026-11-29 20:08:35 0 [ERROR] InnoDB: Cannot set log file ./ib_logfile101 size to 96.000MiB
2026-11-29 20:08:35 0 [ERROR] InnoDB: Database creation was aborted with error Generic error.
2026-11-29 20:08:35 0 [ERROR] Plugin 'InnoDB' registration as a STORAGE ENGINE failed.
2026-11-29 20:08:35 0 [ERROR] Unknown/unsupported storage engine: InnoDB
2026-11-29 20:08:35 0 [ERROR] Aborting
""".splitlines()


def test_the_first_line_is_kept_with_the_last_ones():
    parts = _tail(FULL_DISK).split(" | ")
    assert len(parts) == 4 and parts[1] == "..."
    assert parts[0].endswith("failed with error 28")
    assert parts[2].endswith("storage engine: InnoDB") and parts[3].endswith("Aborting")


def test_short_logs_are_whole_and_blank_lines_dropped():
    assert _tail(["a", " ", "b"]) == "a | b"
    assert _tail(["", "  "]) == "(nothing logged)"
    assert _tail(["first", "second"], 1) == "first"


def test_disk_hint_only_when_space_is_low(tmp_path):
    assert disk_hint(tmp_path, low=1) == ""
    hint = disk_hint(tmp_path, low=1 << 62)
    assert f"MiB free on the file system of {tmp_path}" in hint and "--work" in hint
    assert disk_hint(tmp_path / "missing" / "deeper") == ""
