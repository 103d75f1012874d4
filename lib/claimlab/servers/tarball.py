"""MySQL in the generic Linux tarball layout (`mysql-tarball` targets): a local directory or
archive (`path:`), or a release fetched once by `version:` and verified against its checksum.

Where a release comes from: the target's `mirror:`, else the CLAIMLAB_MYSQL_MIRROR environment
variable, else MySQL's own download site. A mirror is a folder (or URL) of archives with a
`SHA256SUMS` file beside them, as `sha256sum` writes it; that list names the archive of a version
and the checksum it must have, so a mirror may hold builds named otherwise than MySQL names its
own (a source build for another glibc; a patched fork, chosen by `archive:` since it reports the
same version as the release it patches).

Downloading uses urllib; a `file://` mirror's archives are read in place, never copied. An archive
is hashed once and the result kept beside the cache, so repetitions neither re-hash nor re-extract;
it is hashed and checked before anything is extracted.

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
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Iterator

from ..errors import TargetUnavailable
from .flavor import Flavor
from .local import Installation, binary_version
from .options import TargetSpec

OFFICIAL_BASES = ("https://cdn.mysql.com/Downloads/MySQL-{mm}", "https://cdn.mysql.com/archives/mysql-{mm}")
MIRROR_ENV = "CLAIMLAB_MYSQL_MIRROR"
SUMS_FILE = "SHA256SUMS"
_ARCHIVE_SUFFIX = re.compile(r"\.tar(\.gz|\.xz)?$|\.tgz$")
# How to provide a mirror, said wherever a release is missing: one line.
MIRROR_HINT = (f"set {MIRROR_ENV} to a folder or URL holding MySQL generic Linux tarballs and a "
               f"{SUMS_FILE} file (e.g. {MIRROR_ENV}=file:///srv/mysql-mirror)")


def tarball_names(version: str) -> list[str]:
    """The file names MySQL has used for a release's generic Linux x86_64 tarball, most likely
    first: 5.7 only as glibc2.12 .tar.gz; 8.0 as glibc2.28, 2.17 (8.0.x) or 2.12 (early 8.0)
    .tar.xz; 8.4 and later as glibc2.28 or 2.17 .tar.xz."""
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) < (8, 0):
        return [f"mysql-{version}-linux-glibc2.12-x86_64.tar.gz"]
    glibcs = ("2.28", "2.17", "2.12") if (major, minor) == (8, 0) else ("2.28", "2.17")
    return [f"mysql-{version}-linux-glibc{g}-x86_64.tar.xz" for g in glibcs]


def mirror_url(target: TargetSpec) -> str | None:
    """The mirror a target's release comes from: its own `mirror:`, else the environment's (a
    URL, or a plain folder path), else None (MySQL's site)."""
    if target.mirror:
        return target.mirror.rstrip("/")
    env = os.environ.get(MIRROR_ENV, "").strip()
    if not env:
        return None
    if re.match(r"^(https?|file)://", env):
        return env.rstrip("/")
    return Path(env).resolve().as_uri()


def tarball_urls(version: str, mirror: str | None = None) -> list[str]:
    """Candidate URLs in order: a mirror holds the files side by side; MySQL's own site keeps the
    current releases under Downloads/ and older ones under archives/."""
    mm = ".".join(version.split(".")[:2])
    bases = [mirror.rstrip("/")] if mirror else [b.format(mm=mm) for b in OFFICIAL_BASES]
    return [f"{base}/{name}" for name in tarball_names(version) for base in bases]


def parse_sums(text: str) -> dict[str, str]:
    """`sha256sum`'s output (`<hex>  <name>`, `*` before the name in binary mode) as name -> hex;
    other lines are ignored, as sha256sum --check ignores them with a warning."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([0-9a-fA-F]{64}) [ *](\S.*)$", line.strip())
        if m:
            out[m[2].strip()] = m[1].lower()
    return out


def mirror_archive(version: str, sums: dict[str, str], archive: str | None = None) -> str | None:
    """The file of `sums` that holds `version`: `archive` when named, else the release's own
    names first (MySQL's), then any `mysql-VERSION-linux-*-x86_64` tarball. A name with more
    between the version and `linux` (`mysql-8.0.40-enhanced-linux-...`) is another build and is
    taken only when named."""
    if archive:
        return archive if archive in sums else None
    for name in tarball_names(version):
        if name in sums:
            return name
    plain = re.compile(rf"^mysql-{re.escape(version)}-linux-[A-Za-z0-9.]+-x86_64\.(tar\.gz|tar\.xz|tgz)$")
    return next((name for name in sorted(sums) if plain.match(name)), None)


def installed(target: TargetSpec, cache: Path, download: bool = True) -> Installation:
    """The target's extracted tarball, extracting (and downloading) once into the cache."""
    archive_sha = None
    if target.path and Path(target.path).is_dir():
        base = Path(target.path).resolve()
    else:
        expected = None
        if target.path:
            archive = Path(target.path)
        else:
            archive, expected = _located(target, cache, download)
        if not archive.is_file():
            raise TargetUnavailable(f"target {target.name}: tarball {archive} does not exist")
        archive_sha = _verified_digest(target, archive, cache, expected)
        base = cache / "mysql" / f"{_ARCHIVE_SUFFIX.sub('', archive.name)}-{archive_sha[:12]}"
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
                        layout_lines=layout, origin=origin_of(version_text),
                        archive=archive.name if archive_sha else None, archive_sha256=archive_sha)


def origin_of(version_text: str) -> str:
    """Where a tarball's mysqld came from, in its own words: MySQL's release builds name their
    edition in `--version` ("MySQL Community Server - GPL"), a build from the source tree says
    "Source distribution" (CMake's default COMPILATION_COMMENT)."""
    if "source distribution" in version_text.lower():
        return "source build"
    if re.search(r"MySQL (Community|Enterprise) Server|Commercial", version_text):
        return "vendor tarball"
    return "tarball"


def _located(target: TargetSpec, cache: Path, download: bool) -> tuple[Path, str | None]:
    """The archive of the target's release (downloaded if need be) and the sha256 its source
    lists for it (None where the source lists none: MySQL's own site)."""
    mirror = mirror_url(target)
    sums = _mirror_sums(target, mirror) if mirror else None
    if sums is None:
        if target.archive:
            raise TargetUnavailable(f"target {target.name}: `archive: {target.archive}` needs a mirror "
                                    f"with a {SUMS_FILE}; {MIRROR_HINT}")
        urls = tarball_urls(target.version, mirror)
        local = [_local_path(url) for url in urls if url.startswith("file://")]
        found = next((path for path in local if path.is_file()), None)
        if found is not None and (target.sha256 or target.md5):
            return found, None
        return _downloaded(target, cache, download, urls), None
    name = mirror_archive(target.version, sums, target.archive)
    if name is None:
        wanted = target.archive or f"MySQL {target.version}"
        raise TargetUnavailable(f"target {target.name}: the mirror {mirror} lists no {wanted} in its "
                                f"{SUMS_FILE} (it has: {', '.join(sorted(sums)) or 'nothing'})")
    url = f"{mirror}/{urllib.parse.quote(name)}"
    if url.startswith("file://"):
        return _local_path(url), sums[name]
    return _downloaded(target, cache, download, [url], listed=True), sums[name]


def _local_path(url: str) -> Path:
    return Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))


def _mirror_sums(target: TargetSpec, mirror: str) -> dict[str, str] | None:
    """The mirror's SHA256SUMS as name -> sha256; None where it has none (a folder of archives
    whose checksums the targets give themselves)."""
    try:
        with urllib.request.urlopen(f"{mirror}/{SUMS_FILE}", timeout=30) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise TargetUnavailable(f"target {target.name}: cannot read {mirror}/{SUMS_FILE}: {exc}") from None
    except (OSError, urllib.error.URLError) as exc:
        reason = getattr(exc, "reason", None) or exc
        if mirror.startswith("file://") and isinstance(reason, FileNotFoundError):
            if not _local_path(mirror).is_dir():
                raise TargetUnavailable(f"target {target.name}: the mirror {mirror} does not exist; "
                                        f"{MIRROR_HINT}") from None
            return None
        raise TargetUnavailable(f"target {target.name}: cannot read {mirror}/{SUMS_FILE}: {reason}") from None
    return parse_sums(text)


def _downloaded(target: TargetSpec, cache: Path, allowed: bool, urls: list[str], listed: bool = False) -> Path:
    """The first of `urls` in the download cache, else downloaded. `listed`: its checksum comes
    from the mirror's list, so the target need not give one."""
    for url in urls:
        archive = cache / "downloads" / url.rsplit("/", 1)[-1]
        if archive.exists():
            return archive
    if not (listed or target.sha256 or target.md5):
        raise TargetUnavailable(f"target {target.name}: MySQL {target.version} is not here; {MIRROR_HINT} "
                                "(or give the target `md5:` from MySQL's download page to fetch it from there)")
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
                            f"({'; '.join(failures[-2:])}); with no network, {MIRROR_HINT}, or give "
                            "the target a `path:`")


def _verified_digest(target: TargetSpec, archive: Path, cache: Path, listed: str | None = None) -> str:
    """The archive's sha256, checked against the target's checksums and the one its mirror lists
    (`listed`). Hashed once per archive file: the result is kept under the cache, keyed by the
    file's path, size and mtime."""
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
    for algo, expected, by in (("sha256", target.sha256, "expected"), ("md5", target.md5, "expected"),
                               ("sha256", listed, f"its mirror's {SUMS_FILE} lists")):
        if expected and known[algo] != expected.lower():
            raise TargetUnavailable(f"target {target.name}: {archive.name} {algo} is "
                                    f"{known[algo]}, {by} {expected}: refusing it")
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
