"""The node's share-scanning process: ``python -m tahoe.storage.scan_worker``.

Started by :class:`~tahoe.storage.share_scan.ScanProcesses` while the lease
checker rebuilds the share index, or collects garbage from the index (its
rows examined, the shares to collect read and collected under their bucket
locks, which this process shares with the node). Reads requests
(``("scan", arguments of`` :func:`~tahoe.storage.share_scan.scan_prefix_for_walk`
``)`` or ``("collect", arguments of`` :func:`~tahoe.storage.collector.plan_and_collect`
``)``) from stdin and writes each answer, or the exception it raised, to stdout, as
length-prefixed pickles, in the order of the requests; ends at the end of
its input, once every answer is written. Up to :data:`AHEAD` prefixes are
scanned at once, sharing :data:`READERS` reader threads, so that the readers
do not wait for the last buckets of one prefix before starting the next. It
reads share files and the index, and deletes or trims only the shares the
index names as expired after reading their leases again. Speaks only with
the node that started it.
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

from .collector import plan_and_collect
from .share_scan import SLICES, read_message, scan_prefix_for_walk, write_message

#: Buckets read at once (a cold disk serves parallel reads much faster than serial ones;
#: the node runs several of these processes).
READERS = SLICES
#: Prefixes scanned at once (requests the node has sent ahead).
AHEAD = 2
#: What a request may ask: ``(kind, args)``.
WORK = {"scan": scan_prefix_for_walk, "collect": plan_and_collect}
#: Added to the node's niceness: scanning takes what CPU the node leaves.
NICENESS = 10


def _write_answers(answers: BinaryIO, pending: queue.Queue[Future[Any] | None]) -> None:
    """Write each scan's answer (or its exception) in the order of the requests."""
    while (scan := pending.get()) is not None:
        error = scan.exception()
        write_message(answers, error if error is not None else scan.result())
        answers.flush()


def main() -> None:
    """Answer requests until stdin ends (at a lower priority than the node: its requests
    come first)."""
    os.nice(NICENESS)
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    readers = ThreadPoolExecutor(READERS, thread_name_prefix="scan")
    prefixes = ThreadPoolExecutor(AHEAD, thread_name_prefix="prefix")
    pending: queue.Queue[Future[Any] | None] = queue.Queue()
    writer = threading.Thread(target=_write_answers, args=(answers, pending), name="answers")
    writer.start()
    try:
        while True:
            try:
                request = read_message(requests)
            except EOFError:
                return
            kind, args = request
            work = WORK[kind]
            pending.put(prefixes.submit(work, *args, readers=readers))
    finally:
        pending.put(None)
        writer.join()


if __name__ == "__main__":
    main()
