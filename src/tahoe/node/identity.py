"""A node's identity files: Ed25519 key, permutation seed, announcement seqnum, and the
API token made anew at each start.

Facts: ``reference/storage-protocol.md`` §4.2 and §7.3-7.4. The key and the
seed, once written, are kept forever: clients place shares by the seed.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..crypto.ed25519 import SigningKey, parse_private_key
from ..introducer.announcement import announced_permutation_seed, tubid_permutation_seed
from .fileutil import write_atomically


def load_or_create_signing_key(basedir: Path,
                               random_bytes: Callable[[int], bytes] = os.urandom) -> SigningKey:
    """Read ``private/node.privkey``, creating it (and ``node.pubkey``) the first time."""
    key_file = basedir / "private" / "node.privkey"
    if key_file.exists():
        key = parse_private_key(key_file.read_bytes())
    else:
        key = SigningKey(random_bytes(32))
        write_atomically(key_file, key.to_file_bytes(), mode=0o600)
    pub_file = basedir / "node.pubkey"
    wanted = key.public_key.to_file_bytes()
    if not pub_file.exists() or pub_file.read_bytes() != wanted:
        write_atomically(pub_file, wanted)
    return key


def _has_shares(shares_dir: Path) -> bool:
    if not shares_dir.is_dir():
        return False
    return any(entry.name != "incoming" and entry.is_dir() and any(entry.iterdir())
               for entry in shares_dir.iterdir())


def load_or_create_permutation_seed(basedir: Path, key: SigningKey, tubid: str,
                                    shares_dir: Path) -> str:
    """The ``permutation-seed-base32`` to announce, chosen once and kept in ``permutation-seed``.

    A new server announces the 84-character form derived from its key; one
    that already holds shares (from before the file existed) announces its
    Tub ID, where older clients placed those shares.
    """
    seed_file = basedir / "permutation-seed"
    if seed_file.exists():
        text = seed_file.read_text().strip()
        if text:
            return text
    if _has_shares(shares_dir):
        seed = tubid_permutation_seed(tubid)
    else:
        seed = announced_permutation_seed(key.public_key)
    write_atomically(seed_file, seed + "\n")
    return seed


def next_announcement_seqnum(basedir: Path) -> int:
    """Increase and persist ``announcement-seqnum`` (starts at 1)."""
    seq_file = basedir / "announcement-seqnum"
    current = 0
    if seq_file.exists():
        try:
            current = int(seq_file.read_text().strip() or "0")
        except ValueError:
            current = 0
    write_atomically(seq_file, f"{current + 1}\n")
    return current + 1


def create_api_auth_token(basedir: Path,
                          random_bytes: Callable[[int], bytes] = os.urandom) -> bytes:
    """Write a new ``private/api_auth_token`` (url-safe base64 of 32 random bytes and a
    newline, mode 0600) and return the token; Tahoe makes a new one at every start, and
    ``tahoe status`` and the ``/private`` pages use it."""
    import base64
    token = base64.urlsafe_b64encode(random_bytes(32))
    write_atomically(basedir / "private" / "api_auth_token", token + b"\n", mode=0o600)
    return token
