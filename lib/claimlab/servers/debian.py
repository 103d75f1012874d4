"""Oracle MySQL from Debian's archive (`mysql-debian` targets), for hosts that cannot install it.

Only Debian unstable (sid) carries Oracle MySQL (`mysql-server-core`, 9.7.x as of 2026), built
against a newer C library than stable hosts have. So claimlab fetches the server package and the
whole closure of its dependencies with the host's own apt tools, against a private sources list,
lists directory and cache (the host's apt configuration and package state are never touched), and
unpacks them side by side into its cache with `dpkg-deb -x`. apt verifies the archive's signature
with the host's `debian-archive-keyring` (`signed-by` in the private list; unauthenticated
packages are refused explicitly).

The unpacked `usr/sbin/mysqld` is then patched (patchelf) to use the bundled loader as its
interpreter and the bundled library directory as its DT_RPATH (which, unlike RUNPATH, also
applies to the libraries' own dependencies). Running it through the loader
(`ld-linux-x86-64.so.2 --library-path ... mysqld`) works too, but then the process is named
`ld-linux-x86-64`, perf and valgrind see the loader as the program, and nothing else about the
process says "mysqld"; the patched binary is an ordinary executable for all of them, and mysqld
still derives its basedir from its own path.

Layout: CACHE/mysql-debian/<package version>/{root/, package.json}, and `current`, a symlink
to the newest complete unpack. A new unpack is built in a staging directory and renamed into
place under a lock, so concurrent callers never see half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from ..errors import TargetUnavailable
from .flavor import MySQL, parse_version
from .local import Installation, binary_version

PACKAGES = ("mysql-server-core", "mysql-client-core")
SUITE = "sid"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
LOADER = "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
LIBDIR = "usr/lib/x86_64-linux-gnu"
MYSQLD = "usr/sbin/mysqld"
APT_TIMEOUT_S = 900


def mirror() -> str:
    """CLAIMLAB_DEBIAN_MIRROR overrides Debian's redirector (e.g. a local mirror or proxy)."""
    return os.environ.get("CLAIMLAB_DEBIAN_MIRROR", DEFAULT_MIRROR).rstrip("/")


def home(cache: Path) -> Path:
    return cache / "mysql-debian"


def installed(cache: Path) -> Installation:
    """The unpacked MySQL claimlab set up, or TargetUnavailable saying how to set it up."""
    current = home(cache) / "current"
    meta_file = current / "package.json"
    if not meta_file.is_file():
        raise TargetUnavailable(f"MySQL from Debian is not set up in {home(cache)}: run "
                                "`claimlab setup-mysql` (or `make setup`)" + _host_problem_suffix())
    meta = json.loads(meta_file.read_text())
    root = current.resolve() / "root"
    binary = root / MYSQLD
    version_text = binary_version(binary)
    return Installation(binary=binary, flavor=MySQL(parse_version(version_text)),
                        version_text=version_text, basedir=root / "usr", origin="Debian package",
                        package=f"{meta['package']} {meta['version']} from Debian {meta['suite']}")


def package_facts(cache: Path) -> dict:
    """What was unpacked (every package and its exact version), for provenance."""
    meta_file = home(cache) / "current" / "package.json"
    return json.loads(meta_file.read_text()) if meta_file.is_file() else {}


def host_problems() -> list[str]:
    """Why this host cannot fetch MySQL from Debian's archive (empty when it can)."""
    problems = []
    if platform.machine() != "x86_64":
        problems.append(f"only x86_64 is supported (this host is {platform.machine()})")
    for tool, package in (("apt-get", "apt"), ("apt-cache", "apt"), ("dpkg-deb", "dpkg"),
                          ("patchelf", "patchelf")):
        if not shutil.which(tool):
            problems.append(f"{tool} is missing (Debian/Ubuntu package {package})")
    if not KEYRING.is_file():
        problems.append(f"{KEYRING} is missing (package debian-archive-keyring)")
    return problems


def _host_problem_suffix() -> str:
    problems = host_problems()
    return f"; this host cannot: {'; '.join(problems)}" if problems else ""


def setup(cache: Path, log: Callable[[str], None] = lambda _: None) -> Installation:
    """Fetch and unpack the newest MySQL the archive carries (a no-op when it is already the
    one unpacked). Raises TargetUnavailable with one line when the host or the archive cannot."""
    problems = host_problems()
    if problems:
        raise TargetUnavailable("cannot set up MySQL from Debian here: " + "; ".join(problems))
    base = home(cache)
    base.mkdir(parents=True, exist_ok=True)
    with _locked(base / ".lock"):
        apt = _PrivateApt(base / "apt")
        log(f"reading Debian {SUITE}'s package lists from {mirror()} (signatures checked with {KEYRING.name})")
        apt.update()
        closure = apt.closure(PACKAGES)
        version = closure[PACKAGES[0]]
        target = base / _dir_name(version)
        if not (target / "package.json").is_file():
            log(f"fetching {PACKAGES[0]} {version} and {len(closure) - 1} packages it needs")
            _unpack(apt, closure, target)
        _point_current(base, target)
    inst = installed(cache)
    log(f"MySQL ready: {inst.describe()}")
    return inst


def _dir_name(version: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+~-]", "_", version)


def _unpack(apt: "_PrivateApt", closure: dict[str, str], target: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    staging.chmod(0o755)
    try:
        debs = staging / "debs"
        debs.mkdir()
        apt.download(closure, debs)
        root = staging / "root"
        root.mkdir()
        for deb in sorted(debs.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(root)], f"unpacking {deb.name}")
        shutil.rmtree(debs)
        final_root = target / "root"     # the patched paths name where it will live
        _run(["patchelf", "--set-interpreter", str(final_root / LOADER), "--force-rpath",
              "--set-rpath", str(final_root / LIBDIR), str(root / MYSQLD)], "patching mysqld")
        meta = {"package": PACKAGES[0], "version": closure[PACKAGES[0]], "suite": SUITE,
                "mirror": mirror(), "keyring": str(KEYRING), "packages": closure}
        (staging / "package.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _point_current(base: Path, target: Path) -> None:
    link = base / f".current-{os.getpid()}"
    link.unlink(missing_ok=True)
    link.symlink_to(target.name)
    link.rename(base / "current")


class _PrivateApt:
    """The host's apt-get and apt-cache, with every path that holds state pointed at `state`."""

    def __init__(self, state: Path, keyring: Path = KEYRING):
        self.state, self.keyring = state, keyring
        for sub in ("lists/partial", "cache/archives/partial"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        self.sources = state / "sources.list"
        self.sources.write_text(f"deb [signed-by={keyring}] {mirror()} {SUITE} main\n")

    def options(self) -> list[str]:
        settings = {
            "Dir::Etc::SourceList": self.sources, "Dir::Etc::SourceParts": "/dev/null",
            "Dir::State::Lists": self.state / "lists", "Dir::Cache": self.state / "cache",
            "Dir::State::status": "/dev/null", "Debug::NoLocking": "1",
            "APT::Architectures::": "amd64", "Acquire::Languages": "none",
            "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled": "false",
            # Whatever the host's configuration says: only signed archives, signed packages.
            "Acquire::AllowInsecureRepositories": "false",
            "Acquire::AllowDowngradeToInsecureRepositories": "false",
            "APT::Get::AllowUnauthenticated": "false",
        }
        return [arg for key, value in settings.items() for arg in ("-o", f"{key}={value}")]

    def update(self) -> None:
        out = _run(["apt-get", *self.options(), "-q", "update"], "apt-get update")
        errors = [ln for ln in out.splitlines() if ln.startswith(("E:", "Err:", "W: GPG", "W: Failed"))]
        if errors:
            raise TargetUnavailable(f"Debian {SUITE} at {mirror()}: {errors[0]}")

    def closure(self, packages: tuple[str, ...]) -> dict[str, str]:
        """Every package (name -> version) installing `packages` would install on an empty
        system: apt's own resolver, so alternatives and virtual packages are chosen as apt does."""
        cmd = ["apt-get", *self.options(), "-s", "-q", "install", "--no-install-recommends", *packages]
        result = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                timeout=APT_TIMEOUT_S, env=_apt_env())
        if result.returncode != 0:
            if "Unable to locate package" in result.stderr or "has no installation candidate" in result.stderr:
                raise TargetUnavailable(f"Debian {SUITE} ({mirror()}) no longer carries {packages[0]}: "
                                        "MySQL cannot be fetched from Debian's archive")
            raise TargetUnavailable(f"resolving {' '.join(packages)} in Debian {SUITE}: "
                                    f"{_last(result.stderr)}")
        found = dict(re.findall(r"^Inst (\S+) \((\S+) ", result.stdout, re.M))
        missing = [p for p in packages if p not in found]
        if missing:
            raise TargetUnavailable(f"apt did not plan to install {', '.join(missing)}")
        return found

    def download(self, closure: dict[str, str], into: Path) -> None:
        pins = [f"{name}={version}" for name, version in sorted(closure.items())]
        _run(["apt-get", *self.options(), "-q", "download", *pins], "apt-get download", cwd=into)
        got = len(list(into.glob("*.deb")))
        if got != len(closure):
            raise TargetUnavailable(f"apt-get download fetched {got} of {len(closure)} packages")


def _apt_env() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}


def _run(cmd: list[str], doing: str, cwd: Path | None = None) -> str:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                timeout=APT_TIMEOUT_S, env=_apt_env(), cwd=cwd)
    except subprocess.TimeoutExpired:
        raise TargetUnavailable(f"{doing} did not finish within {APT_TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise TargetUnavailable(f"{doing} failed: {_last(result.stderr or result.stdout)}")
    return result.stdout + result.stderr


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("E:")] or lines
    return errors[-1] if errors else "(no message)"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield
