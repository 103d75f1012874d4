"""MySQL in the generic Linux tarball layout (`mysql-tarball` targets): a local directory or
archive (`path:`), or a release fetched once by `version:` and verified against its checksum.

Downloading uses urllib (it also reads `file://` mirrors, which pooch does not); an archive is
hashed once and the result kept beside the cache, so repetitions neither re-hash nor re-extract.

`layout_from_debian` packs a Debian unpack (debian.py) into the same layout, so this path runs for
real where Oracle's own tarballs cannot be downloaded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

from ..errors import TargetUnavailable
from .flavor import Flavor
from .local import Installation, binary_version
from .options import TargetSpec

OFFICIAL_BASES = ("https://cdn.mysql.com/Downloads/MySQL-{mm}", "https://cdn.mysql.com/archives/mysql-{mm}")
_ARCHIVE_SUFFIX = re.compile(r"\.tar(\.gz|\.xz)?$|\.tgz$")


def tarball_names(version: str) -> list[str]:
    """The file names MySQL has used for a release's generic Linux x86_64 tarball, most likely
    first: 5.7 only as glibc2.12 .tar.gz; 8.0 as glibc2.28, 2.17 (8.0.x) or 2.12 (early 8.0)
    .tar.xz; 8.4 and later as glibc2.28 or 2.17 .tar.xz."""
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) < (8, 0):
        return [f"mysql-{version}-linux-glibc2.12-x86_64.tar.gz"]
    glibcs = ("2.28", "2.17", "2.12") if (major, minor) == (8, 0) else ("2.28", "2.17")
    return [f"mysql-{version}-linux-glibc{g}-x86_64.tar.xz" for g in glibcs]


def tarball_urls(version: str, mirror: str | None = None) -> list[str]:
    """Candidate URLs in order: a mirror holds the files side by side; MySQL's own site keeps the
    current releases under Downloads/ and older ones under archives/."""
    mm = ".".join(version.split(".")[:2])
    bases = [mirror.rstrip("/")] if mirror else [b.format(mm=mm) for b in OFFICIAL_BASES]
    return [f"{base}/{name}" for name in tarball_names(version) for base in bases]


def installed(target: TargetSpec, cache: Path, download: bool = True) -> Installation:
    """The target's extracted tarball, extracting (and downloading) once into the cache."""
    if target.path and Path(target.path).is_dir():
        base = Path(target.path).resolve()
    else:
        archive = Path(target.path) if target.path else _downloaded(target, cache, download)
        if not archive.is_file():
            raise TargetUnavailable(f"target {target.name}: tarball {archive} does not exist")
        digest = _verified_digest(target, archive, cache)
        base = cache / "mysql" / f"{_ARCHIVE_SUFFIX.sub('', archive.name)}-{digest[:12]}"
        if not (base / "bin" / "mysqld").exists():
            _extract(target, archive, base)
    binary = base / "bin" / "mysqld"
    if not binary.exists():
        raise TargetUnavailable(f"target {target.name}: {base} has no bin/mysqld; is it a MySQL "
                                "generic Linux tarball?")
    try:
        version_text = binary_version(binary)
    except TargetUnavailable as exc:
        raise TargetUnavailable(f"target {target.name}: {exc}") from None
    flavor = Flavor.from_version_text(version_text)
    # Named explicitly: a build's compiled-in defaults may assume another layout (Debian's does).
    layout = (f"lc-messages-dir={base / 'share'}", f"character-sets-dir={base / 'share' / 'charsets'}",
              f"plugin-dir={base / 'lib' / 'plugin'}")
    return Installation(binary=binary, flavor=flavor, version_text=version_text, basedir=base,
                        layout_lines=layout)


def _downloaded(target: TargetSpec, cache: Path, allowed: bool) -> Path:
    urls = tarball_urls(target.version, target.mirror)
    for url in urls:
        archive = cache / "downloads" / url.rsplit("/", 1)[-1]
        if archive.exists():
            return archive
    if not (target.sha256 or target.md5):
        raise TargetUnavailable(f"target {target.name}: MySQL {target.version} is not downloaded, and "
                                "downloading needs the published checksum: add `md5:` (from MySQL's "
                                "download page) or `sha256:`, or give `path:` to a local tarball")
    if not allowed:
        raise TargetUnavailable(f"target {target.name}: MySQL {target.version} is not downloaded yet "
                                f"(`claimlab run` fetches it from {urls[0]})")
    failures = []
    for url in urls:
        archive = cache / "downloads" / url.rsplit("/", 1)[-1]
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkstemp(prefix=archive.name, suffix=".part", dir=archive.parent)[1])
        try:
            with urllib.request.urlopen(url, timeout=30) as response, open(partial, "wb") as out:
                shutil.copyfileobj(response, out)
        except (OSError, urllib.error.URLError) as exc:
            partial.unlink(missing_ok=True)
            failures.append(f"{url}: {getattr(exc, 'reason', None) or exc}")
            continue
        partial.rename(archive)
        return archive
    raise TargetUnavailable(f"target {target.name}: cannot download MySQL {target.version} "
                            f"({'; '.join(failures[-2:])}); with no network, download it elsewhere "
                            "and give its `path:`, or a `mirror:`")


def _verified_digest(target: TargetSpec, archive: Path, cache: Path) -> str:
    """The archive's sha256, checked against the target's checksums. Hashed once per archive
    file: the result is kept under the cache, keyed by the file's path, size and mtime."""
    st = archive.stat()
    key = hashlib.sha256(str(archive.resolve()).encode()).hexdigest()[:16]
    index = cache / "mysql" / ".hashes" / f"{key}.json"
    stamp = {"path": str(archive.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    known = json.loads(index.read_text()) if index.is_file() else {}
    if {k: known.get(k) for k in stamp} != stamp:
        digests = {"sha256": hashlib.sha256(), "md5": hashlib.md5()}
        with open(archive, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                for d in digests.values():
                    d.update(chunk)
        known = stamp | {algo: d.hexdigest() for algo, d in digests.items()}
        index.parent.mkdir(parents=True, exist_ok=True)
        tmp = index.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known))
        tmp.replace(index)
    for algo in ("sha256", "md5"):
        expected = getattr(target, algo)
        if expected and known[algo] != expected.lower():
            raise TargetUnavailable(f"target {target.name}: {archive.name} {algo} is "
                                    f"{known[algo]}, expected {expected}: refusing it")
    return known["sha256"]


def _extract(target: TargetSpec, archive: Path, base: Path) -> None:
    base.parent.mkdir(parents=True, exist_ok=True)
    with _locked(base.parent / ".extract.lock"):
        if (base / "bin" / "mysqld").exists():
            return     # another process extracted it while we waited
        staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=base.parent))
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
            inner = [p for p in staging.iterdir() if p.is_dir()]
            if len(inner) != 1:
                raise TargetUnavailable(f"target {target.name}: {archive.name} is not a MySQL tarball")
            if base.exists():
                shutil.rmtree(base)    # a partial one from before locks existed
            inner[0].rename(base)
        except (tarfile.TarError, EOFError, OSError) as exc:
            reason = str(exc).splitlines()[0].rstrip(":") if str(exc) else type(exc).__name__
            raise TargetUnavailable(f"target {target.name}: cannot extract {archive.name} (corrupt or "
                                    f"truncated?): {reason}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


# -- the Debian build in the tarball layout ---------------------------------------------------

def layout_from_debian(inst: Installation, dest: Path) -> Path:
    """Lay a Debian unpack out as MySQL's generic tarball does: bin/mysqld, lib/plugin,
    lib/private (the libraries it needs) and share/. `bin/mysqld` keeps the Debian unpack's loader
    as its interpreter (an interpreter path must be absolute) and finds its libraries through
    $ORIGIN, so the directory and archives of it can be moved; they run while that unpack exists."""
    root = inst.basedir.parent          # .../root, whose usr/ is the Debian basedir
    libdir = root / "usr" / "lib" / "x86_64-linux-gnu"
    if dest.exists():
        raise FileExistsError(dest)
    (dest / "bin").mkdir(parents=True)
    private = dest / "lib" / "private"
    private.mkdir(parents=True)
    for name in _needed_closure(inst.binary, libdir):
        shutil.copy2(libdir / name, private / name)
    shutil.copytree(root / "usr" / "lib" / "mysql" / "plugin", dest / "lib" / "plugin", symlinks=True)
    shutil.copytree(root / "usr" / "share" / "mysql", dest / "share", symlinks=True)
    mysqld = dest / "bin" / "mysqld"
    shutil.copy2(inst.binary, mysqld)
    subprocess.run(["patchelf", "--force-rpath", "--set-rpath", "$ORIGIN/../lib/private", str(mysqld)],
                   check=True, capture_output=True)
    return dest


def _needed_closure(binary: Path, libdir: Path) -> list[str]:
    """The shared libraries `binary` loads (DT_NEEDED, transitively), as files in `libdir`."""
    seen: set[str] = set()
    todo = [binary]
    while todo:
        out = subprocess.run(["patchelf", "--print-needed", str(todo.pop())], check=True,
                             capture_output=True, text=True).stdout.split()
        for name in out:
            if name not in seen and (libdir / name).exists():
                seen.add(name)
                todo.append(libdir / name)
    return sorted(seen)


def pack(directory: Path, archive: Path) -> Path:
    """A .tar.gz or .tar.xz of `directory` with one top-level folder, as MySQL ships them
    (compressed fast rather than small: these archives are made to be unpacked here)."""
    xz = archive.name.endswith(".tar.xz")
    with tarfile.open(archive, "w:xz" if xz else "w:gz", **({"preset": 0} if xz else {"compresslevel": 1})) as tar:
        tar.add(directory, arcname=_ARCHIVE_SUFFIX.sub("", archive.name))
    return archive
