"""A mirror of MySQL tarballs: its SHA256SUMS names the archive of a version and the checksum it
must have; nothing is extracted before that checksum matches. The archives here are tiny stand-ins
whose `bin/mysqld` only answers `--version` (no server starts: the real builds are started by
tests/integration/test_tarball_mirror.py)."""

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from claimlab.errors import TargetUnavailable
from claimlab.servers import TargetSpec, installation, tarball

FORK = "mysql-8.0.40-enhanced-linux-glibc2.36-x86_64.tar.xz"


def _archive(path: Path, version_line: str) -> str:
    """A one-folder tarball whose mysqld prints `version_line`; returns its sha256."""
    top = tarball._ARCHIVE_SUFFIX.sub("", path.name)
    script = f"#!/bin/sh\necho '{version_line}'\n".encode()
    with tarfile.open(path, "w:xz" if path.name.endswith(".xz") else "w:gz") as tar:
        info = tarfile.TarInfo(f"{top}/bin/mysqld")
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    folder = tmp_path / "mirror"
    folder.mkdir()
    sums = {
        "mysql-5.7.23-linux-glibc2.36-x86_64.tar.xz": _archive(
            folder / "mysql-5.7.23-linux-glibc2.36-x86_64.tar.xz",
            "/x/bin/mysqld  Ver 5.7.23 for Linux on x86_64 (Source distribution)"),
        "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz": _archive(
            folder / "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz",
            "/x/bin/mysqld  Ver 8.0.40 for Linux on x86_64 (Source distribution)"),
        FORK: _archive(folder / FORK, "/x/bin/mysqld  Ver 8.0.40 for Linux on x86_64 (Source distribution)"),
    }
    (folder / "SHA256SUMS").write_text("".join(f"{sha}  {name}\n" for name, sha in sums.items()))
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(tarball.MIRROR_ENV, str(folder))
    return folder, sums


def test_sums_are_read_as_sha256sum_writes_them():
    text = f"{'a' * 64}  one.tar.xz\n{'B' * 64} *two.tar.gz\n# a comment\nnot a line\n"
    assert tarball.parse_sums(text) == {"one.tar.xz": "a" * 64, "two.tar.gz": "b" * 64}


def test_a_version_finds_its_plain_build_never_the_fork():
    names = {FORK: "x", "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz": "y",
             "mysql-5.7.23-linux-glibc2.36-x86_64.tar.xz": "z"}
    assert tarball.mirror_archive("8.0.40", names) == "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz"
    assert tarball.mirror_archive("8.0.40", {FORK: "x"}) is None
    assert tarball.mirror_archive("8.0.40", names, FORK) == FORK
    # MySQL's own name wins where the mirror holds both
    vendor = "mysql-8.0.40-linux-glibc2.28-x86_64.tar.xz"
    assert tarball.mirror_archive("8.0.40", names | {vendor: "v"}) == vendor


def test_origin_is_read_from_the_programs_own_words():
    assert tarball.origin_of("mysqld  Ver 8.0.40 for Linux on x86_64 (Source distribution)") == "source build"
    assert tarball.origin_of("mysqld  Ver 8.0.40 for Linux on x86_64 (MySQL Community Server - GPL)") \
        == "vendor tarball"


def test_the_mirror_comes_from_the_target_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(tarball.MIRROR_ENV, raising=False)
    plain = TargetSpec(name="m", kind="mysql-tarball", version="8.0.40")
    assert tarball.mirror_url(plain) is None                      # MySQL's site
    monkeypatch.setenv(tarball.MIRROR_ENV, str(tmp_path))
    assert tarball.mirror_url(plain) == tmp_path.resolve().as_uri()
    own = TargetSpec(name="m", kind="mysql-tarball", version="8.0.40", mirror="https://example.org/m/")
    assert tarball.mirror_url(own) == "https://example.org/m"


def test_each_build_is_found_verified_and_extracted_in_place(mirror, tmp_path):
    folder, sums = mirror
    vanilla = installation(TargetSpec(name="v", kind="mysql-tarball", version="8.0.40"))
    fork = installation(TargetSpec(name="f", kind="mysql-tarball", version="8.0.40", archive=FORK))
    old = installation(TargetSpec(name="o", kind="mysql-tarball", version="5.7.23"))
    assert vanilla.flavor == fork.flavor and vanilla.binary != fork.binary
    assert fork.archive == FORK and fork.archive_sha256 == sums[FORK]
    assert vanilla.provenance()["origin"] == "source build" and old.provenance()["version"] == "5.7.23"
    assert not (tmp_path / "cache" / "downloads").exists()        # a file:// mirror is read in place


def test_an_archive_unlike_its_listed_checksum_is_refused_before_extraction(mirror, tmp_path):
    folder, sums = mirror
    name = "mysql-5.7.23-linux-glibc2.36-x86_64.tar.xz"
    (folder / "SHA256SUMS").write_text(f"{'0' * 64}  {name}\n")
    with pytest.raises(TargetUnavailable, match=f"{name} sha256 is {sums[name]}, its mirror's SHA256SUMS "
                                                "lists 0+: refusing it"):
        installation(TargetSpec(name="o", kind="mysql-tarball", version="5.7.23"))
    assert not list((tmp_path / "cache" / "mysql").glob("mysql-5.7.23*"))


def test_a_folder_without_sums_gives_a_release_by_its_vendor_name_and_the_targets_checksum(tmp_path, monkeypatch):
    """A plain folder of archives: the release is found under MySQL's own file name and checked
    against the target's `sha256`; a wrong one is refused before anything is extracted."""
    folder = tmp_path / "plain"
    folder.mkdir()
    name = "mysql-9.7.4-linux-glibc2.28-x86_64.tar.xz"
    sha = _archive(folder / name, "/x/bin/mysqld  Ver 9.7.4 for Linux on x86_64 (MySQL Community Server - GPL)")
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path / "cache"))
    wrong = TargetSpec(name="v", kind="mysql-tarball", version="9.7.4", mirror=folder.as_uri(), sha256="0" * 64)
    with pytest.raises(TargetUnavailable, match=f"{name} sha256 is {sha}, expected 0+: refusing it"):
        installation(wrong)
    assert not list((tmp_path / "cache" / "mysql").glob("mysql-9.7.4*"))
    inst = installation(TargetSpec(name="v", kind="mysql-tarball", version="9.7.4", mirror=folder.as_uri(), sha256=sha))
    assert inst.archive == name and inst.archive_sha256 == sha and inst.provenance()["origin"] == "vendor tarball"
    assert not (tmp_path / "cache" / "downloads").exists()        # read in place


def test_without_a_mirror_the_target_says_how_to_give_one(monkeypatch, tmp_path):
    monkeypatch.delenv(tarball.MIRROR_ENV, raising=False)
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(TargetUnavailable, match=r"^target o: MySQL 5\.7\.23 is not here; set "
                                                r"CLAIMLAB_MYSQL_MIRROR to a folder") as exc:
        installation(TargetSpec(name="o", kind="mysql-tarball", version="5.7.23"), download=False)
    assert "\n" not in str(exc.value)
    monkeypatch.setenv(tarball.MIRROR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(TargetUnavailable, match="the mirror file://.*/nowhere does not exist"):
        installation(TargetSpec(name="o", kind="mysql-tarball", version="5.7.23"))


def test_a_named_archive_the_mirror_does_not_list_is_unavailable(mirror):
    with pytest.raises(TargetUnavailable, match="lists no mysql-8.0.99-x.tar.xz in its SHA256SUMS"):
        installation(TargetSpec(name="f", kind="mysql-tarball", version="8.0.40", archive="mysql-8.0.99-x.tar.xz"))


def test_the_manifest_names_each_program_by_origin_and_archive(mirror):
    """Two targets reporting 8.0.40 are told apart in a run's provenance by their archives; a
    target the run skipped and a server claimlab does not start are not described."""
    from claimlab import provenance
    folder, sums = mirror
    targets = {"v": TargetSpec(name="v", kind="mysql-tarball", version="8.0.40"),
               "f": TargetSpec(name="f", kind="mysql-tarball", version="8.0.40", archive=FORK),
               "o": TargetSpec(name="o", kind="mysql-tarball", version="5.7.23"),
               "x": TargetSpec(name="x", kind="external", host="127.0.0.1", port=3306)}
    programs = provenance.server_programs(targets, skipped={"o": "not here"})
    assert sorted(programs) == ["f", "v"]
    assert programs["f"]["archive_sha256"] == sums[FORK] != programs["v"]["archive_sha256"]
    assert programs["v"] | {"archive_sha256": None} == {
        "version": "8.0.40", "version_text": "Ver 8.0.40 for Linux on x86_64 (Source distribution)",
        "origin": "source build", "package": None, "archive": "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz",
        "archive_sha256": None}
