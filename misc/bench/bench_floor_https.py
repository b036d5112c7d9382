"""The HTTPS floor of a small upload: 10 allocate + 10 write requests, pipelined, nothing else.

A tiny client that opens one TLS connection to each storage server's NURL
(made from its node directory: the key hash of ``private/node.pem``, the
swissnum of ``private/storage.furl``, the port of its FURL) and, per "file",
writes to every server at once an allocation (``POST /storage/v1/immutable/SI``,
one share, a new random storage index) and, right behind it on the same
connection, the ``PATCH`` of the whole share; the file is done when every
answer has come (one round trip). No hashing, encryption, erasure coding,
web request or server selection: what is left is HTTP, TLS and the storage
servers themselves. It uses the project's own HTTP/1.1 client
(``tahoe.httpwire.client``) with the request bytes built once.

Runs as its own process. Prints JSON ``{"seconds": [...]}`` on stdout. Usage::

    python misc/bench/bench_floor_https.py --count 30 --file-size 1000 NODEDIR...
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from twisted.internet import defer, task

from bench_floor import share_size_for
from tahoe.client.https_connector import endpoint_for
from tahoe.httpwire.client import HTTP1ClientProtocol, PersistentConnection
from tahoe.storage import http_messages as m
from tahoe.util import base32
from tahoe.util.nurl import parse_nurl
from tests.support.proxied_grid import read_storage_server


async def upload_once(connections: list[tuple[PersistentConnection, bytes]],
                      share_size: int) -> float:
    """One file: an allocation and its write to every server, pipelined; seconds taken."""
    started = time.perf_counter()
    si = base32.b2a(os.urandom(16)).encode("ascii")
    data = os.urandom(share_size)
    body = m.AllocateRequest(frozenset({0}), share_size).to_cbor()
    secrets = [(b"x-tahoe-authorization", m.secret_header(kind, os.urandom(32)))
               for kind in (m.Secret.LEASE_RENEW, m.Secret.LEASE_CANCEL)]
    upload = (b"x-tahoe-authorization", m.secret_header(m.Secret.UPLOAD, os.urandom(20)))
    pending = []
    for connection, authorization in connections:
        protocol = connection.protocol
        assert isinstance(protocol, HTTP1ClientProtocol)
        auth = (b"authorization", authorization)
        pending.append(protocol.request(b"POST", b"/storage/v1/immutable/" + si,
                                        [auth, *secrets, upload,
                                         (b"content-type", b"application/cbor")], body))
        pending.append(protocol.request(
            b"PATCH", b"/storage/v1/immutable/" + si + b"/0",
            [auth, upload, (b"content-range", m.format_content_range(0, share_size, None))],
            data))
    answers = await defer.gatherResults(pending, consumeErrors=True)
    if [a.status for a in answers] != [200, 201] * len(connections):
        raise RuntimeError(f"unexpected answers: {[a.status for a in answers]}")
    return time.perf_counter() - started


async def run(reactor: Any, nurls: list[str], count: int, warmup: int,
              share_size: int) -> list[float]:
    """Connect to every server, then time ``count`` files after ``warmup`` untimed ones."""
    connections = []
    for text in nurls:
        nurl = parse_nurl(text)
        connection = PersistentConnection(endpoint_for(nurl, reactor), b"server", reactor)
        await connection.connect()
        connections.append((connection, m.authorization(nurl.swissnum_bytes)))
    try:
        seconds = []
        for i in range(warmup + count):
            elapsed = await upload_once(connections, share_size)
            if i >= warmup:
                seconds.append(elapsed)
        return seconds
    finally:
        for connection, _ in connections:
            connection.stop()


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the floor, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nodedirs", nargs="+", type=Path, help="storage node directories")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--file-size", type=int, default=1000,
                        help="write one share of a file this large (3-of-10) to each server")
    args = parser.parse_args(argv)
    nurls = []
    for nodedir in args.nodedirs:
        info = read_storage_server(nodedir)
        nurls.append(info.nurl(info.host, info.port))

    async def go(reactor: Any) -> None:
        share_size = share_size_for(args.file_size)
        seconds = await run(reactor, nurls, args.count, args.warmup, share_size)
        json.dump({"seconds": seconds, "servers": len(nurls), "share_size": share_size},
                  sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()

    task.react(lambda reactor: defer.Deferred.fromCoroutine(go(reactor)))  # exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
