"""Test hosts with network addresses of their own, for the cluster test: each host in a network
namespace of its own, wired to a bridge that the test makes, with the test (the client) on the
bridge in the machine's own namespace; where namespaces cannot be made, each host on an address
of its own in 127.0.0.0/8.

Why namespaces: a host in its own namespace has its own network stack, as another machine has,
so a process there can reach and be reached on its test address only, and "listens only on the
address given" is checked on a stack where nothing else listens. The fallback keeps the test
running for a user who is not root (or in a container that may not make namespaces), and says so;
CLAIMLAB_TEST_NETWORK=loopback takes it where namespaces could be made, to test the fallback.

Names carry a random tag and the subnet is a /24 of 10.231.0.0/16 no interface here uses, so
parallel runs, or what a killed run left behind, do not collide.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field

PREFIX = "10.231"           # an unusual private /16: each run takes one /24 of it
LOOPBACK_CLIENT = "127.0.0.1"
# what a process listens on, as psutil reads it in the process's own namespace (psutil reads the
# /proc/net tables of the namespace it runs in, so it runs in the host's)
LISTENING = ("import json, sys, psutil; print(json.dumps(sorted({(c.laddr.ip, c.laddr.port) for c in "
             "psutil.Process(int(sys.argv[1])).net_connections('inet') if c.status == psutil.CONN_LISTEN})))")


@dataclass
class HostNetwork:
    """Each host's address and namespace ("" on loopback), and the client's address."""

    client: str
    addresses: dict[str, str]
    namespaces: dict[str, str] = field(default_factory=dict)
    bridge: str = ""
    links: list[str] = field(default_factory=list)     # veth ends on the bridge
    why_loopback: str = ""

    def describe(self) -> str:
        if self.why_loopback:
            return (f"network: loopback addresses {', '.join(self.addresses.values())}, no namespaces "
                    f"({self.why_loopback})")
        return (f"network: namespaces {', '.join(self.namespaces.values())} on bridge {self.bridge} "
                f"({', '.join(f'{n} {a}' for n, a in self.addresses.items())}; the client {self.client})")

    def command(self, host: str, cmd: list[str]) -> list[str]:
        """`cmd` run in the host's namespace."""
        ns = self.namespaces.get(host)
        return ["ip", "netns", "exec", ns, *cmd] if ns else cmd

    def listening(self, host: str, pid: int) -> set[tuple[str, int]]:
        """(address, port) of every socket the process `pid` of `host` listens on."""
        out = subprocess.run(self.command(host, [sys.executable, "-c", LISTENING, str(pid)]),
                             capture_output=True, text=True, check=True)
        return {(ip, port) for ip, port in json.loads(out.stdout)}

    def close(self) -> None:
        """Every namespace (after ending what still runs in it: processes this test started
        there), then the bridge, whose veth ends go with their namespaces. Each step is tried,
        whatever the one before it did."""
        for ns in self.namespaces.values():
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for link in self.links:     # gone with their namespace's end, unless that never got there
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        if self.bridge:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _free_subnet() -> str:
    """A /24 of PREFIX that no interface here has an address in."""
    used = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    free = [n for n in range(256) if f" {PREFIX}.{n}." not in used]
    return f"{PREFIX}.{random.choice(free)}"


def make(hosts: list[str]) -> HostNetwork:
    """One namespace per host, on a bridge, or loopback addresses where namespaces cannot be
    made (not root, no `ip`, or `ip netns add` refused). A failure past the first namespace is
    an error, not a fallback: the namespace path is the one to test where it can run."""
    loopback = HostNetwork(LOOPBACK_CLIENT, {h: f"127.0.0.{i + 1}" for i, h in enumerate(hosts)})
    if os.environ.get("CLAIMLAB_TEST_NETWORK") == "loopback":
        loopback.why_loopback = "CLAIMLAB_TEST_NETWORK=loopback"
        return loopback
    if os.geteuid() != 0:
        loopback.why_loopback = "not root: network namespaces need root"
        return loopback
    if shutil.which("ip") is None:
        loopback.why_loopback = "no `ip` command (iproute2)"
        return loopback
    tag = uuid.uuid4().hex[:6]
    net = HostNetwork("", {}, bridge=f"clb{tag}")
    first = f"claimlab-{tag}-{hosts[0]}"
    added = subprocess.run(["ip", "netns", "add", first], capture_output=True, text=True)
    if added.returncode:
        loopback.why_loopback = f"`ip netns add` failed: {added.stderr.strip()}"
        return loopback
    net.namespaces[hosts[0]] = first
    try:
        subnet = _free_subnet()
        net.client = f"{subnet}.1"
        _ip("link", "add", net.bridge, "type", "bridge")
        _ip("addr", "add", f"{net.client}/24", "dev", net.bridge)
        _ip("link", "set", net.bridge, "up")
        for i, host in enumerate(hosts):
            ns = net.namespaces.get(host) or f"claimlab-{tag}-{host}"
            if host not in net.namespaces:
                _ip("netns", "add", ns)
                net.namespaces[host] = ns
            outside, inside = f"clv{tag}o{i}", f"clv{tag}i{i}"
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            net.links.append(outside)
            _ip("link", "set", inside, "netns", ns)
            _ip("link", "set", outside, "master", net.bridge)
            _ip("link", "set", outside, "up")
            net.addresses[host] = f"{subnet}.{i + 2}"
            _ip("-n", ns, "addr", "add", f"{net.addresses[host]}/24", "dev", inside)
            _ip("-n", ns, "link", "set", inside, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
    except BaseException:
        net.close()
        raise
    return net
