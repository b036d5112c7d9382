"""Throughput of the immutable core on a 64 MiB input, with zfec-alone and AES-alone controls.

Prints a table and writes every timing to a JSON file. Not a test: nothing
here asserts a speed. Usage::

    python misc/bench/bench_core.py [--size-mib 64] [--repeat 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

from tahoe.crypto.aes import AESCTRStream
from tahoe.immutable.codec import SegmentCodec
from tahoe.immutable.encoder import ImmutableEncoder
from tahoe.immutable.keys import ConvergentKeyHasher
from tahoe.immutable.params import EncodingParameters

MIB = 1024 * 1024


def timed(func: Callable[[], object], repeat: int) -> list[float]:
    """Run ``func`` ``repeat`` times; return wall-clock seconds of each run."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times


def segments(data: bytes, size: int) -> list[memoryview]:
    """Cut ``data`` into views of ``size`` bytes."""
    view = memoryview(data)
    return [view[i:i + size] for i in range(0, len(data), size)]


def main(argv: list[str] | None = None) -> int:
    """Run the core benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=float, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-segment-size", type=int, default=MIB)
    parser.add_argument("--json", default="bench-core.json")
    args = parser.parse_args(argv)

    size = int(args.size_mib * MIB)
    data = os.urandom(size)
    params = EncodingParameters(3, 7, 10, args.max_segment_size)
    geometry = params.geometry(size)
    key = bytes(16)
    seg = geometry.segment_size

    def aes_only() -> None:
        stream = AESCTRStream(key)
        for piece in segments(data, seg):
            stream.process(piece)

    codec = SegmentCodec(3, 10)
    padded = [bytes(p) + bytes(-len(p) % 3) for p in segments(data, seg)]

    def zfec_only() -> None:
        for piece in padded:
            codec.encode(piece)

    def sha256_expanded() -> None:
        # What the encoder must hash at least: every block (N/k of the data) and the ciphertext twice.
        for piece in padded:
            for _ in range(10 * 1 // 3 + 2):
                hashlib.sha256(piece).digest()

    def convergent_key_pass() -> None:
        hasher = ConvergentKeyHasher(b"secret", geometry)
        for piece in segments(data, seg):
            hasher.update(piece)
        hasher.key()

    def encode_core() -> None:
        encoder = ImmutableEncoder(key, size, params)
        for piece in segments(data, seg):
            encoder.encode_segment(piece)
        encoder.finish()

    cases = {
        "aes_ctr_alone": aes_only,
        "zfec_alone": zfec_only,
        "sha256_of_hashed_bytes": sha256_expanded,
        "convergent_key_pass": convergent_key_pass,
        "encode_core": encode_core,
    }
    results: dict[str, dict[str, object]] = {}
    for name, func in cases.items():
        times = timed(func, args.repeat)
        median = statistics.median(times)
        results[name] = {"seconds": times, "median_s": median, "mb_per_s": size / 1e6 / median}
    control = results["aes_ctr_alone"]["median_s"] + results["zfec_alone"]["median_s"]  # type: ignore
    report = {
        "size_bytes": size, "k": 3, "n": 10, "segment_size": seg, "repeat": args.repeat,
        "python": sys.version.split()[0], "cases": results,
        "ratio_encode_to_aes_plus_zfec": results["encode_core"]["median_s"] / control,  # type: ignore
    }
    print(f"core encode benchmark: {size / MIB:.0f} MiB, k=3 N=10, segment {seg} bytes, "
          f"median of {args.repeat}")
    print(f"{'case':28} {'median s':>9} {'MB/s':>9}")
    for name, res in results.items():
        print(f"{name:28} {res['median_s']:9.3f} {res['mb_per_s']:9.1f}")
    print(f"encode / (aes + zfec) time ratio: {report['ratio_encode_to_aes_plus_zfec']:.2f}")
    with open(args.json, "w") as out:
        json.dump(report, out, indent=2)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
