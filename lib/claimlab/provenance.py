"""Provenance: the code, packages and host that produced a result, recorded with every run."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import psutil

PACKAGES = ("claimlab", "mysql-connector-python", "pandas", "numpy", "scipy", "seaborn",
            "matplotlib", "papermill", "nbconvert", "PyYAML", "tqdm", "psutil")


def git_commit(root: Path) -> dict:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                                 timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def connector_implementation() -> str:
    """Which mysql-connector-python ran: its C extension or pure Python (they differ in client cost)."""
    try:
        import _mysql_connector  # noqa: F401
        return "c-extension"
    except ImportError:
        return "pure-python"


def tool_version(*cmd: str) -> str | None:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=10,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else None


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_facts(cpuinfo: str) -> dict:
    """The processor's identity from /proc/cpuinfo (its first processor). A VM's model name can
    hide the generation ("AMD EPYC" on two hosts whose scans differed by up to
    1.4x and whose collation ratios differed by 25%); family, model and stepping do not, and a hash
    of the feature flags tells instruction-set differences (e.g. AVX-512) apart."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        name, _, value = line.partition(":")
        fields.setdefault(name.strip(), value.strip())
    flags = fields.get("flags", "").split()
    return {"vendor": fields.get("vendor_id"), "family": fields.get("cpu family"),
            "model": fields.get("model"), "stepping": fields.get("stepping"),
            "microcode": fields.get("microcode"),
            "flags_sha": _short_hash(" ".join(sorted(flags))) if flags else None}


def cpu_label(host: dict) -> str:
    """A run's processor in words, e.g. "AMD EPYC (AuthenticAMD family 26 model 2 stepping 1)";
    runs recorded before the family was say so."""
    cpu = host.get("cpu") or {}
    if not cpu.get("family"):
        return f"{host.get('cpu_model') or 'an unknown CPU'} (family not recorded)"
    return (f"{host.get('cpu_model')} ({cpu.get('vendor')} family {cpu['family']} model {cpu.get('model')} "
            f"stepping {cpu.get('stepping')})")


def host_facts() -> dict:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    cpu = cpu_facts(cpuinfo)
    cpu_model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines()
                      if line.startswith("model name")), None)
    return {
        "hostname_hash": _short_hash(platform.node()),  # which machine, without naming it
        "cpu_model": cpu_model,
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 1024 ** 3, 1),
        "kernel": platform.release(),
        "os": _os_release(),
        "python": platform.python_version(),
        "loadavg": loadavg(),
    }


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return None


def server_programs(targets: dict, skipped: dict | None = None) -> dict[str, dict]:
    """Per local target that runs: its version, where its program came from (vendor tarball,
    source build, Debian or OS package) and the archive's sha256. Two builds can report one
    version (a patched fork of 8.0.40 says 8.0.40), so the version alone does not name what ran."""
    from .servers import installation
    out = {}
    for name, spec in targets.items():
        if not spec.local or name in (skipped or {}):
            continue
        out[name] = installation(spec, download=False).provenance()
    return out


def collect(root: Path, servers: dict[str, dict] | None = None) -> dict:
    out = {
        "git": git_commit(root),
        "packages": package_versions(),
        "connector_implementation": connector_implementation(),
        "sysbench": tool_version("sysbench", "--version"),
        "host": host_facts(),
    }
    if servers is not None:
        out["servers"] = servers
    return out
