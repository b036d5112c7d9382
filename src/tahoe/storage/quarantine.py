"""Moving aside an immutable share that a client reported corrupt, once the server agrees.

Tahoe-LAFS 1.20 only writes a corruption advisory, so a repair cannot
replace a corrupt share: the server answers ``alreadygot`` for it, and the
share stays corrupt for good. Ours goes one step further. When a client
advises that an immutable share is corrupt, the server checks the share
against itself (:func:`tahoe.immutable.decoder.verify_share_without_cap`:
every block, tree and chain against the share's own UEB, which is all a
server can check without the cap). A share that fails is moved, with its
leases, to ``corrupt-shares/<SI>.<shnum>.<time>`` beside ``shares/``, where
the operator can look at it; the server then no longer holds that share, so
the repairer's upload puts a good copy in its place. A share that passes
stays: a client cannot make a server drop a good share. So do bytes whose
header is not one of a known share version (they may be of a format this
version does not know), and shares larger than :data:`VERIFY_LIMIT` (the
check runs on the reactor).
"""
from __future__ import annotations

import os

from ..immutable.errors import ImmutableFormatError
from . import disk
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .paths import storage_index_to_b32

__all__ = ["QUARANTINE_DIR", "VERIFY_LIMIT", "quarantine_if_corrupt"]

QUARANTINE_DIR = "corrupt-shares"
#: Shares up to this many bytes are checked (a 64 MiB share takes about 0.3 s here).
VERIFY_LIMIT = 64 * 1024 * 1024


def quarantine_if_corrupt(storage_root: str, storage_index: bytes, shnum: int,
                          share_path: str, now: float) -> list[str] | None:
    """Check the share at ``share_path``; if it is corrupt, move it under
    ``storage_root/corrupt-shares``.

    :returns: the problems found (the share was moved), ``[]`` (intact, kept), or None
        when it was not checked (too large, gone, or not an immutable share).
    """
    try:
        with disk.open_file(share_path) as file:
            container = ImmutableContainer.open(file)
            if container.data_length > VERIFY_LIMIT:
                return None
            data = container.read_share_data(0, container.data_length)
    except (OSError, ContainerError):  # gone, or not an immutable share: keep as is
        return None
    # the decoder (and zfec) only here: a server that is never told of a corrupt share
    # does not load them
    from ..immutable.decoder import verify_share_without_cap
    try:
        problems = verify_share_without_cap(storage_index, shnum, data)
    except ImmutableFormatError:  # no header of a known share version: not ours to judge
        return None
    if problems:
        target = os.path.join(storage_root, QUARANTINE_DIR)
        os.makedirs(target, exist_ok=True)
        name = f"{storage_index_to_b32(storage_index)}.{shnum}.{int(now)}"
        try:
            os.replace(share_path, os.path.join(target, name))
        except FileNotFoundError:
            return problems  # another advisory moved it first
        disk.remove_empty_dirs(os.path.dirname(share_path))
    return problems
