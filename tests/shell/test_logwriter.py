"""The node's log written by a thread of its own (:mod:`tahoe.node.logwriter`), on real
pipes: the logging thread does not wait for a stalled output, and no line is lost or
reordered."""
from __future__ import annotations

import os
import threading

from tahoe.node.logwriter import BackgroundWriter


def _pipe() -> tuple[int, object]:
    read_end, write_end = os.pipe()
    return read_end, os.fdopen(write_end, "w", encoding="utf-8")


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_lines_come_out_in_order_and_all_by_close() -> None:
    read_end, output = _pipe()
    reader_result: list[str] = []
    reader = threading.Thread(target=lambda: reader_result.append(_read_all(read_end)))
    reader.start()
    writer = BackgroundWriter(output)  # type: ignore[arg-type]
    lines = [f"line {n}\n" for n in range(5000)]
    for line in lines:
        writer.write(line)
    writer.flush()
    writer.close()
    writer.write("after close\n")  # written at once
    output.close()  # type: ignore[attr-defined]
    reader.join(10)
    assert reader_result == ["".join(lines) + "after close\n"]


def test_a_stalled_output_does_not_hold_up_the_logging_thread() -> None:
    """Nobody reads the pipe: its buffer fills and the writing thread waits; the logging
    thread's writes still return at once, up to the limit."""
    read_end, output = _pipe()
    writer = BackgroundWriter(output, limit=1000)  # type: ignore[arg-type]
    big = "x" * 4095 + "\n"

    def log_lines() -> None:
        for _ in range(64):  # 256 KiB: more than a pipe holds
            writer.write(big)
        for n in range(500):
            writer.write(f"later {n}\n")
    logging = threading.Thread(target=log_lines)
    logging.start()
    logging.join(5)
    held_up = logging.is_alive()
    reader_result: list[str] = []
    reader = threading.Thread(target=lambda: reader_result.append(_read_all(read_end)))
    reader.start()
    writer.close()
    output.close()  # type: ignore[attr-defined]
    reader.join(10)
    logging.join(10)
    assert not held_up
    assert reader_result == [big * 64 + "".join(f"later {n}\n" for n in range(500))]


def test_a_broken_output_is_not_the_callers_problem() -> None:
    read_end, output = _pipe()
    os.close(read_end)  # writes now fail (EPIPE)
    writer = BackgroundWriter(output)  # type: ignore[arg-type]
    writer.write("nobody hears this\n")
    writer.close()
    writer.write("nor this\n")

