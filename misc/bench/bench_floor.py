"""The Foolscap-only floor of a small upload: 10 allocate + 10 write + 10 close, nothing else.

A tiny client that connects to storage servers (their FURLs read from
``NODEDIR/private/storage.furl``) and, per "file", does what an immutable
upload of one share per server must do on the wire and nothing more: sends
``allocate_buckets`` (a new random storage index, one share) to every server
at once, and as each bucket writer arrives sends ``write`` of the whole share
and ``close`` without waiting in between; the file is done when every
``close`` has been answered (two round trips).  No hashing, encryption,
erasure coding, web request or server selection: what is left is Foolscap
(serialization, TLS) and the storage servers themselves.

Runs as its own process (a client node is one), with our Tub settings by
default (``tahoe.node.tub.new_tub``: Nagle off, small writes coalesced) or
Foolscap's plain Tub (``--plain``).  Prints JSON ``{"seconds": [...]}`` on
stdout.  Usage::

    python misc/bench/bench_floor.py --count 30 --file-size 1000 NODEDIR...
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from foolscap.api import Referenceable, Tub
from twisted.internet import defer, task

import tahoe.storage.interfaces  # noqa: F401  (registers RIStorageServer's schema)
from tahoe.immutable.encoder import ImmutableEncoder
from tahoe.immutable.params import EncodingParameters
from tahoe.node.tub import new_tub



def share_size_for(file_size: int, needed: int = 3, happy: int = 7, total: int = 10) -> int:
    """Bytes of one share of a ``file_size``-byte CHK file (956 for 1,000 bytes at 3-of-10)."""
    params = EncodingParameters(needed, happy, total)
    return int(ImmutableEncoder(bytes(16), file_size, params).share_length)


async def upload_once(rrefs: list[Any], share_size: int, canary: Referenceable) -> float:
    """One file's worth of calls: allocate, write, close on every server; seconds taken."""
    started = time.perf_counter()
    storage_index = os.urandom(16)
    data = os.urandom(share_size)

    async def one(rref: Any) -> None:
        _, writers = await rref.callRemote("allocate_buckets", storage_index, os.urandom(32),
                                           os.urandom(32), {0}, share_size, canary)
        writer = writers[0]
        wrote = writer.callRemote("write", 0, data)
        closed = writer.callRemote("close")
        await defer.gatherResults([wrote, closed], consumeErrors=True)

    await defer.gatherResults([defer.Deferred.fromCoroutine(one(r)) for r in rrefs],
                              consumeErrors=True)
    return time.perf_counter() - started


async def run(reactor: Any, furls: list[str], count: int, warmup: int, share_size: int,
              plain: bool) -> list[float]:
    """Connect to every server, then time ``count`` files after ``warmup`` untimed ones."""
    tub = Tub() if plain else new_tub()
    tub.startService()
    try:
        rrefs = await defer.gatherResults([tub.getReference(furl) for furl in furls],
                                          consumeErrors=True)
        canary = Referenceable()
        seconds = []
        for i in range(warmup + count):
            elapsed = await upload_once(rrefs, share_size, canary)
            if i >= warmup:
                seconds.append(elapsed)
        return seconds
    finally:
        await tub.stopService()


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the floor, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nodedirs", nargs="+", type=Path, help="storage node directories")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--file-size", type=int, default=1000,
                        help="write one share of a file this large (3-of-10) to each server")
    parser.add_argument("--plain", action="store_true", help="Foolscap's own Tub (Nagle on)")
    args = parser.parse_args(argv)
    furls = [(d / "private" / "storage.furl").read_text().strip() for d in args.nodedirs]

    async def go(reactor: Any) -> None:
        share_size = share_size_for(args.file_size)
        seconds = await run(reactor, furls, args.count, args.warmup, share_size, args.plain)
        json.dump({"seconds": seconds, "servers": len(furls), "share_size": share_size,
                   "plain_tub": args.plain}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()

    task.react(lambda reactor: defer.Deferred.fromCoroutine(go(reactor)))  # exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
