"""Hosts in Linux network namespaces, on one switched /24, for multi-host grid tests.

:class:`Network` creates a switch namespace holding a bridge and, per host,
a namespace with a veth pair whose far end is on the bridge; every host has
its own address ``10.213.0.<n>`` (inside namespaces the test creates, nothing
in the machine's own namespace).  Every name starts with ``t13`` and carries
a per-network tag; :meth:`Network.remove` (called on leaving the ``with``)
deletes the namespaces, which deletes their links.

Faults: a host's link set down and up (a partition and its healing), link
shaping with ``tc`` (``netem`` delay and loss where the kernel has
``sch_netem``, else a ``tbf`` rate limit), and random packet loss with an
``iptables`` ``statistic`` rule inside the host.

A test talks to a node in a namespace with :func:`Host.connect`: the socket
is created in the host's namespace by a short-lived thread (``setns`` changes
only the calling thread), then used from anywhere.
"""
from __future__ import annotations

import ctypes
import http.client
import os
import socket
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

import attrs

__all__ = ["Host", "Network", "NsHTTPConnection"]

CLONE_NEWNET = 0x40000000
SUBNET = "10.213.0"


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, timeout=30)


def _socket_in(namespace: str, family: int = socket.AF_INET,
               kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A new socket belonging to ``namespace`` (created by a thread that joins it)."""
    result: list[Any] = []

    def create() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {namespace}")
            result.append(socket.socket(family, kind))
        except BaseException as error:
            result.append(error)
        finally:
            os.close(fd)
        # The thread ends here, and its namespace with it: no way back is needed.

    thread = threading.Thread(target=create, name=f"setns-{namespace}")
    thread.start()
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]  # type: ignore[no-any-return]


@attrs.frozen
class Host:
    """One namespace with one address.

    :ivar namespace: ``t13<tag>h<n>``.
    :ivar address: ``10.213.0.<n>``.
    :ivar link: the name of the host's link inside its namespace.
    :ivar switch_port: the far end, on the bridge in the switch namespace.
    """

    namespace: str
    address: str
    link: str
    switch_port: str
    switch: str

    @property
    def exec_prefix(self) -> list[str]:
        """``ip netns exec NAMESPACE``: runs a command here, keeping its PID."""
        return ["ip", "netns", "exec", self.namespace]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command in this namespace to completion."""
        return _run([*self.exec_prefix, *argv], check=check)

    def connect(self, host: str, port: int, timeout: float) -> socket.socket:
        """A TCP connection made from this namespace."""
        sock = _socket_in(self.namespace)
        sock.settimeout(timeout)
        try:
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        return sock

    def set_link(self, up: bool) -> None:
        """Cut this host off the switch (down) or plug it back (up)."""
        _run(["ip", "netns", "exec", self.switch, "ip", "link", "set", self.switch_port,
              "up" if up else "down"])

    def shape(self, delay_ms: int, loss_percent: float, rate_mbit: int) -> str:
        """Impair the host's outgoing traffic; return what was applied.

        ``netem`` (delay and loss) where the kernel has it; otherwise a ``tbf``
        rate limit, and loss by :meth:`drop_randomly`.
        """
        self.unshape()
        netem = self.run("tc", "qdisc", "add", "dev", self.link, "root", "netem", "delay",
                         f"{delay_ms}ms", "loss", f"{loss_percent}%", "rate",
                         f"{rate_mbit}mbit", check=False)
        if netem.returncode == 0:
            return f"netem delay {delay_ms} ms, loss {loss_percent}%, {rate_mbit} Mbit/s"
        self.run("tc", "qdisc", "add", "dev", self.link, "root", "tbf", "rate",
                 f"{rate_mbit}mbit", "burst", "64kbit", "latency", f"{max(delay_ms, 50)}ms")
        self.drop_randomly(loss_percent)
        return (f"tbf {rate_mbit} Mbit/s (queueing up to {max(delay_ms, 50)} ms), "
                f"iptables loss {loss_percent}% (no sch_netem in this kernel)")

    def unshape(self) -> None:
        """Remove any shaping and loss rule."""
        self.run("tc", "qdisc", "del", "dev", self.link, "root", check=False)
        self.run("iptables", "-F", "INPUT", check=False)

    def drop_randomly(self, percent: float) -> None:
        """Drop incoming packets at random, ``percent`` of them."""
        self.run("iptables", "-A", "INPUT", "-m", "statistic", "--mode", "random",
                 "--probability", f"{percent / 100:.4f}", "-j", "DROP")


class Network:
    """A switch namespace with a bridge and ``count`` host namespaces on it.

    :param tag: distinguishes this network's names (``t13<tag>…``, at most 15
        characters with the suffixes, the kernel's limit for link names).
    """

    def __init__(self, count: int, tag: str = "") -> None:
        self.tag = tag or f"{os.getpid() % 1000}"
        self.switch = f"t13{self.tag}sw"
        self.hosts: list[Host] = []
        self._count = count

    def __enter__(self) -> Network:
        try:
            self._create()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def _create(self) -> None:
        _run(["ip", "netns", "add", self.switch])
        in_switch = ["ip", "netns", "exec", self.switch]
        _run([*in_switch, "ip", "link", "add", "t13br", "type", "bridge"])
        _run([*in_switch, "ip", "link", "set", "t13br", "up"])
        for n in range(1, self._count + 1):
            namespace = f"t13{self.tag}h{n}"
            port, link = f"t13{self.tag}p{n}", f"t13{self.tag}e{n}"
            _run(["ip", "netns", "add", namespace])
            self.hosts.append(Host(namespace, f"{SUBNET}.{n}", link, port, self.switch))
            _run([*in_switch, "ip", "link", "add", port, "type", "veth", "peer", "name", link])
            _run([*in_switch, "ip", "link", "set", link, "netns", namespace])
            _run([*in_switch, "ip", "link", "set", port, "master", "t13br", "up"])
            in_host = ["ip", "netns", "exec", namespace]
            _run([*in_host, "ip", "link", "set", "lo", "up"])
            _run([*in_host, "ip", "addr", "add", f"{SUBNET}.{n}/24", "dev", link])
            _run([*in_host, "ip", "link", "set", link, "up"])

    def remove(self) -> None:
        """Delete every namespace of this network (their links go with them)."""
        for host in self.hosts:
            _run(["ip", "netns", "del", host.namespace], check=False)
        _run(["ip", "netns", "del", self.switch], check=False)
        self.hosts = []

    @staticmethod
    def leftovers() -> list[str]:
        """Namespaces named ``t13…`` that exist now (for a test's last check)."""
        names = _run(["ip", "netns", "list"]).stdout.split()
        return [n for n in names if n.startswith("t13")]


class NsHTTPConnection(http.client.HTTPConnection):
    """``http.client`` from inside a host's namespace (to its own 127.0.0.1, say)."""

    def __init__(self, host_ns: Host, address: str, port: int, timeout: float) -> None:
        super().__init__(address, port, timeout=timeout)
        self._host_ns = host_ns

    def connect(self) -> None:
        """Open the TCP connection in the namespace."""
        self.sock = self._host_ns.connect(self.host, self.port, self.timeout)  # type: ignore

