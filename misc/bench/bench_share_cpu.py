"""CPU per 1 kB share of one storage server's HTTP layers and disk work, in one process.

A :class:`~tahoe.storage.server.StorageServer` behind its HTTPS storage API
(``httpwire`` server protocol, ``storage.http_api``) on a temporary storage
directory is fed, per share, the bytes our client pipelines: ``POST`` (the
allocation) and ``PATCH`` (the whole share) in one piece, as a TLS record
would deliver them. No TLS, no socket, no reactor: what is timed is the
process CPU of the parsing, dispatch, allocation, share file, close, answers
and the share index (rows written as a node's server batches them). So it
isolates what the storage server adds to the HTTPS floor
(``bench_floor_https.py``), and moves with no other process; on a loaded
machine a grid's per-share figure (``/proc/PID/stat``) is 2 to 3 times this,
its caches cold at each request. Usage::

    python misc/bench/bench_share_cpu.py [--shares 3000] [--size 1116] [--profile FILE]

Run it with ``PYTHONPATH`` at another tree's ``src`` to compare two versions
(alternate them: the machine's load moves both).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import tempfile
import time
from binascii import b2a_base64
from collections.abc import Sequence
from typing import Any

from twisted.internet.task import Clock

from tahoe.httpwire.server import HTTP1ServerFactory
from tahoe.stats.registry import Statistics
from tahoe.storage import http_messages as messages
from tahoe.storage.http_api import StorageHTTPApplication
from tahoe.storage.server import StorageServer
from tahoe.util import base32

__all__ = ["main"]

SWISSNUM = b"s" * 32
WARM_UP = 200


class _Transport:
    """Takes what the protocol writes (the answers) and nothing else."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None  # loseConnection, pauseProducing, registerProducer...


def _request(method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]],
             body: bytes) -> bytes:
    lines = [b"%s %s HTTP/1.1\r\nhost: 127.0.0.1\r\n" % (method, target)]
    lines += [b"%s: %s\r\n" % header for header in headers]
    lines.append(b"content-length: %d\r\n\r\n" % len(body))
    return b"".join(lines) + body


def _secret(kind: bytes) -> tuple[bytes, bytes]:
    return b"x-tahoe-authorization", kind + b" " + b2a_base64(os.urandom(32), newline=False)


def share_requests(number: int, size: int) -> bytes:
    """A new storage index's allocation of one share and its whole write, pipelined, with
    our client's headers (``client.storage_https.allocate_and_write``)."""
    path = f"/storage/v1/immutable/{base32.b2a(os.urandom(16))}".encode("ascii")
    shnum = number % 10
    authorization = (b"authorization", messages.authorization(SWISSNUM))
    upload = _secret(b"upload-secret")
    cbor = b"application/cbor"
    allocate = _request(b"POST", path, [
        authorization, _secret(b"lease-renew-secret"), _secret(b"lease-cancel-secret"), upload,
        (b"accept", cbor), (b"content-type", cbor)],
        messages.AllocateRequest(frozenset([shnum]), size).to_cbor())
    write = _request(b"PATCH", b"%s/%d" % (path, shnum), [
        authorization, upload, (b"accept", cbor),
        (b"content-range", messages.format_content_range(0, size, None))], os.urandom(size))
    return allocate + write


def run(shares: int, size: int, profile: str | None) -> float:
    """Microseconds of process CPU per share (after a warm-up)."""
    clock = Clock()
    clock.advance(time.time())
    with tempfile.TemporaryDirectory(prefix="bench-share-cpu-") as root:
        server = StorageServer(os.path.join(root, "storage"), b"n" * 20, clock,
                               application_version=b"bench", batch_index=True)
        application = StorageHTTPApplication(server, SWISSNUM, Statistics(time.monotonic))
        protocol = HTTP1ServerFactory(application, clock).buildProtocol(None)
        transport = _Transport()
        protocol.makeConnection(transport)
        feeds = [share_requests(number, size) for number in range(WARM_UP + shares)]
        for data in feeds[:WARM_UP]:
            protocol.dataReceived(data)
            clock.advance(0)
        transport.written.clear()
        profiler = cProfile.Profile(time.thread_time) if profile else None
        started = time.process_time()
        if profiler is not None:
            profiler.enable()
        for data in feeds[WARM_UP:]:
            protocol.dataReceived(data)
            clock.advance(0)
        if profiler is not None:
            profiler.disable()
        spent = time.process_time() - started
        created = sum(answer.count(b" 201 Created\r\n") for answer in transport.written)
        server.close()
    if created != shares:
        raise SystemExit(f"{created} of {shares} shares were answered 201")
    if profiler is not None and profile:
        profiler.dump_stats(profile)
    return spent / shares * 1e6


def main() -> None:
    """Parse the arguments, run, print the figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shares", type=int, default=3000)
    parser.add_argument("--size", type=int, default=1116,
                        help="share size in bytes (a 1 kB file's share: 1116)")
    parser.add_argument("--profile", help="also write a cProfile (thread CPU) here")
    args = parser.parse_args()
    per_share = run(args.shares, args.size, args.profile)
    print(f"{per_share:.1f} us of CPU per share ({args.shares} shares of {args.size} bytes)")


if __name__ == "__main__":
    main()
