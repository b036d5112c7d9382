"""Encode a sample file into Tahoe-compatible shares on disk and read it back, verified.

Until the local grid exists, this is what ``make run`` shows: the cap a
Tahoe-LAFS 1.20 client would compute for the same bytes and convergence
secret, the shares written as files, and a download from any 3 of them.
"""
from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

from tahoe.caps.parse import parse_cap
from tahoe.immutable.decoder import ShareDecoder
from tahoe.immutable.encoder import encode_bytes
from tahoe.util import base32


def main() -> int:
    """Encode, write shares, decode from three random shares, and print what happened."""
    plaintext = b"".join(b"line %06d of the sample file\n" % i for i in range(40000))
    secret = bytes(range(32))
    result = encode_bytes(plaintext, secret)
    cap = parse_cap(result.cap.to_string())
    workdir = Path(tempfile.mkdtemp(prefix="tahoe-demo-"))
    si = base32.b2a(cap.storage_index)  # type: ignore[union-attr]
    share_dir = workdir / "shares" / si[:2] / si
    share_dir.mkdir(parents=True)
    for shnum, share in enumerate(result.shares):
        (share_dir / str(shnum)).write_bytes(share)
    chosen = sorted(random.sample(range(len(result.shares)), cap.needed))  # type: ignore[union-attr]
    decoder = ShareDecoder(cap, {n: (share_dir / str(n)).read_bytes() for n in chosen})  # type: ignore[arg-type]
    back = b"".join(decoder.read())
    print(f"sample file: {len(plaintext)} bytes")
    print(f"read cap:    {cap.to_string()}")
    print(f"verify cap:  {cap.verify_cap().to_string()}")  # type: ignore[union-attr]
    print(f"shares:      {len(result.shares)} files under {share_dir}")
    print(f"decoded from shares {chosen}: {'identical' if back == plaintext else 'MISMATCH'}")
    print("(the local grid and web gateway arrive with the client-node issue)")
    return 0 if back == plaintext else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
