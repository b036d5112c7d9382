"""What TLS costs the client per byte of share data: on the reactor, or in a thread.

Starts a sink (our HTTP/1.1 server, answering every request at once and
dropping its body; its own process) over each server TLS of ``--servers``
(``stdlib``: ``httpwire.tls.TLSServer``, the storage server's; ``twisted``:
Twisted's TLS over pyOpenSSL, the server's before), and sends it
``--count`` writes of ``--size`` bytes, at most ``--window`` outstanding,
through each client transport, measuring wall time and the client process's
CPU time per MB:

* ``reactor``: ``httpwire.client.PersistentConnection`` (pyOpenSSL over a
  memory BIO, on the reactor thread: what every request used before);
* ``thread``: ``httpwire.threaded.ThreadedConnection`` (the standard
  library's ``ssl`` on a socket, in a thread of its own: what share data of
  128 KiB or more now uses).

The sink's CPU per MB is measured too (the server side of the same bytes).
Prints a table and writes ``--json``. Usage::

    python misc/bench/bench_tls.py [--count 300] [--size 350000] [--json bench-tls.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SINK = """
import sys
from foolscap.api import Tub
from twisted.internet import reactor
from tahoe.httpwire.server import HTTP1ServerFactory, Response
from tahoe.httpwire.tls import TLSServerFactory, certificate_spki_hash, server_context

class Drop:
    def body_received(self, data): pass
    def body_complete(self): return Response(200, [], b"ok")

certificate = Tub().myCertificate
http = HTTP1ServerFactory(lambda request: Drop(), reactor)
if sys.argv[1] == "twisted":  # Twisted's TLS over pyOpenSSL, as the server had before
    from twisted.internet.ssl import CertificateOptions
    from twisted.protocols.tls import TLSMemoryBIOFactory
    factory = TLSMemoryBIOFactory(CertificateOptions(
        privateKey=certificate.privateKey.original, certificate=certificate.original), False, http)
else:
    factory = TLSServerFactory(server_context(certificate), http)
port = reactor.listenTCP(0, factory, interface="127.0.0.1")
print(port.getHost().port, certificate_spki_hash(certificate), flush=True)
reactor.run()
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(transport: str, port: int, spki: str, count: int, size: int, window: int) -> None:
    """Send the writes through one transport in this process; print wall and CPU per MB
    (JSON) and exit."""
    from twisted.internet import defer, task

    from tahoe.client.https_connector import endpoint_for
    from tahoe.httpwire.client import PersistentConnection
    from tahoe.httpwire.threaded import ThreadedConnection
    from tahoe.util.nurl import NURL

    result: dict[str, float] = {}

    async def run(reactor: Any) -> None:
        if transport == "thread":
            connection: Any = ThreadedConnection("127.0.0.1", port, spki, reactor)
        else:
            connection = PersistentConnection(
                endpoint_for(NURL(spki, "127.0.0.1", port, "x"), reactor), b"sink", reactor)
        await connection.request(b"GET", b"/warm-up")
        body = os.urandom(size)
        started, cpu = time.perf_counter(), time.process_time()
        pending = []
        for _ in range(count):
            pending.append(connection.request(b"PATCH", b"/x", [], body))
            if len(pending) >= window:
                await pending.pop(0)
        for d in pending:
            await d
        megabytes = count * size / 1e6
        result["MBps"] = megabytes / (time.perf_counter() - started)
        result["client_cpu_ms_per_MB"] = (time.process_time() - cpu) * 1000 / megabytes
        connection.stop()
        print(json.dumps(result), flush=True)

    task.react(lambda reactor: defer.Deferred.fromCoroutine(run(reactor)))  # exits


def main(argv: list[str] | None = None) -> int:
    """Start the sink, run each transport in a child process (each its own reactor), report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--size", type=int, default=350_000)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("bench-tls.json"))
    parser.add_argument("--servers", default="stdlib",
                        help="the sinks' TLS, comma-separated: stdlib, twisted")
    parser.add_argument("--child", nargs=3, metavar=("TRANSPORT", "PORT", "SPKI"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        transport, port, spki = args.child
        measure(transport, int(port), spki, args.count, args.size, args.window)
        return 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    servers = args.servers.split(",")
    sinks = {server: subprocess.Popen([sys.executable, "-c", SINK, server],
                                      stdout=subprocess.PIPE, env=env, text=True)
             for server in servers}
    try:
        where = {}
        for server, sink in sinks.items():
            assert sink.stdout is not None
            where[server] = sink.stdout.readline().split()
        rows: dict[str, list[dict[str, float]]] = {
            f"{transport}/{server}" if len(servers) > 1 else transport: []
            for transport in ("reactor", "thread") for server in servers}
        for _ in range(args.rounds):  # the sinks in turns, each round
            for name in rows:
                transport, _, server = name.partition("/")
                sink = sinks[server or servers[0]]
                port, spki = where[server or servers[0]]
                before = cpu_seconds(sink.pid)
                output = subprocess.run(
                    [sys.executable, __file__, "--count", str(args.count), "--size",
                     str(args.size), "--window", str(args.window), "--child", transport, port,
                     spki], capture_output=True, text=True, env=env, timeout=600, check=True)
                row = json.loads(output.stdout.strip().splitlines()[-1])
                row["sink_cpu_ms_per_MB"] = ((cpu_seconds(sink.pid) - before) * 1000
                                             / (args.count * args.size / 1e6))
                rows[name].append(row)
    finally:
        for sink in sinks.values():
            sink.terminate()
            sink.wait(10)
    report: dict[str, Any] = {"count": args.count, "size": args.size, "window": args.window,
                              "samples": rows, "median": {}}
    for transport, samples in rows.items():
        report["median"][transport] = {key: sorted(s[key] for s in samples)[len(samples) // 2]
                                       for key in samples[0]}
    suffix = f"/{servers[0]}" if len(servers) > 1 else ""
    ratio = (report["median"]["thread" + suffix]["client_cpu_ms_per_MB"]
             / report["median"]["reactor" + suffix]["client_cpu_ms_per_MB"])
    report["thread_over_reactor_client_cpu"] = ratio
    print(f"{'transport':16} {'MB/s':>8} {'client CPU ms/MB':>18} {'sink CPU ms/MB':>16}")
    for transport, figures in report["median"].items():
        print(f"{transport:16} {figures['MBps']:8.0f} {figures['client_cpu_ms_per_MB']:18.2f} "
              f"{figures['sink_cpu_ms_per_MB']:16.2f}")
    print(f"client CPU per byte, thread / reactor: {ratio:.2f}")
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
