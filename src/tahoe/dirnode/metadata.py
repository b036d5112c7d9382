"""Link metadata rules (``reference/mutable-dirnodes.md`` §8.3).

When a link is added or changed, the caller's metadata replaces every key
but ``tahoe``, which clients cannot set: the old ``tahoe`` object is kept,
``linkcrtime`` is set once (from a pre-1.4 ``ctime`` if there was one) and
``linkmotime`` on every change. Time is passed in (float seconds since the epoch).

See ``docs/formats/dirnodes.md``.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

TAHOE_KEY = "tahoe"
LINK_CREATION_TIME = "linkcrtime"
LINK_MODIFICATION_TIME = "linkmotime"
NO_WRITE_KEY = "no-write"


def update_metadata(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
                    now: float) -> dict[str, Any]:
    """The metadata of a link after an add, replace or set-metadata (§8.3).

    :param old: the existing link's metadata, or None for a new name.
    :param new: the caller's metadata, or None to keep the old keys.
    :param now: the current time, float seconds since the epoch.
    :returns: a fresh dict (the inputs are not changed); key order as Tahoe
        produces it: the caller's keys, then ``tahoe`` (kept in place when
        it was already there).
    """
    metadata: dict[str, Any] = copy.deepcopy(dict(old)) if old is not None else {}
    old_ctime = metadata.get("ctime")
    if new is not None:
        replaced = copy.deepcopy(dict(new))
        replaced.pop(TAHOE_KEY, None)
        if TAHOE_KEY in metadata:
            replaced[TAHOE_KEY] = metadata[TAHOE_KEY]
        metadata = replaced
    system = metadata.get(TAHOE_KEY, {})
    if not isinstance(system, dict):
        system = {}
    if LINK_CREATION_TIME not in system:
        system[LINK_CREATION_TIME] = old_ctime if old_ctime is not None else now
    system[LINK_MODIFICATION_TIME] = now
    metadata[TAHOE_KEY] = system
    return metadata


def is_no_write(metadata: Mapping[str, Any]) -> bool:
    """Whether the link asks for its child to be stored without a write cap."""
    return bool(metadata.get(NO_WRITE_KEY, False))
