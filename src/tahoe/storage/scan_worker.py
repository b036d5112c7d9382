"""The node's share-scanning process: ``python -m tahoe.storage.scan_worker``.

Started by :class:`~tahoe.storage.share_scan.ScanProcess` while the lease
checker rebuilds the share index. Reads requests (the arguments of
:func:`~tahoe.storage.share_scan.scan_prefix_for_walk`) from stdin and
writes each answer, or the exception it raised, to stdout, as
length-prefixed pickles; ends at the end of its input. It only reads share
files. Speaks only with the node that started it.
"""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from .share_scan import read_message, scan_prefix_for_walk, write_message

#: Buckets read at once (a cold disk serves parallel reads much faster than serial ones).
READERS = 16


def main() -> None:
    """Answer requests until stdin ends."""
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    readers = ThreadPoolExecutor(READERS, thread_name_prefix="scan")
    while True:
        try:
            args = read_message(requests)
        except EOFError:
            return
        try:
            answer = scan_prefix_for_walk(*args, readers=readers)
        except Exception as error:  # noqa: BLE001 - handed back to the node
            answer = error
        write_message(answers, answer)
        answers.flush()


if __name__ == "__main__":
    main()
