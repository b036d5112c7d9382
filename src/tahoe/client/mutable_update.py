"""In-place updates of MDMF files on the grid: the shell of :mod:`tahoe.mutable.update`.

After a write-mode servermap update (:meth:`.mutable.MutableFileNode.update`):

1. one ``slot_readv`` per share, all at once: each share's checkstring, block hash tree
   nodes the plan needs, and from the k lowest share numbers the salt and
   block of the (at most two) old segments whose bytes are kept;
2. a share whose checkstring is no longer the version's was replaced by
   another writer meanwhile (:class:`UncoordinatedWriteError`, tried again);
   every other share's nodes are checked against the signed root through its
   share hash chain (from the servermap's probe), the blocks against their
   leaves; the old segments are decoded and spliced, the changed segments
   re-encoded and signed (in a worker thread when large);
3. one ``slot_testv_and_readv_and_writev`` per server, all at once: each share
   gets only its changed pieces, tested against the old version's checkstring,
   so a writer that got in between makes this one fail with
   :class:`UncoordinatedWriteError`.

Cases the share layout cannot take in place raise
:class:`~tahoe.mutable.update.UpdateNotInPlace` before anything is written,
and the caller publishes a whole version: an SDMF or empty version, shares of
more than one version or corrupt ones in the map, share numbers missing (their
new hash tree roots cannot be computed without the whole file), a share
whose hashes or blocks do not check out, a server that failed to answer.

See ``docs/formats/mdmf-update.md``.
"""
from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from twisted.python import log

from ..mutable.errors import CorruptShare, LayoutInvalid, UncoordinatedWriteError, \
    UnrecoverableFile
from ..mutable.hashes import parse_chain
from ..mutable.keys import MutableKeys
from ..mutable.layout import parse_header
from ..mutable.servermap import ServerMap
from ..mutable.slot_writes import check_write_answer, checkstring_test, read_vector
from ..mutable.update import (UpdatedVersion, UpdateNotInPlace, UpdatePlan, decode_old_segment,
                              encode_update, old_leaf, old_tree_root, plan_update,
                              splice_segment)
from ..util.hashutil import HASH_SIZE
from .mapupdate import Probe
from .storage_api import ServerGone
from .stragglers import gather

if TYPE_CHECKING:
    from .mutable import MutableFileNode

#: Work above this many bytes runs in a worker thread.
THREAD_THRESHOLD = 256 * 1024


async def update_with_retries(node: "MutableFileNode", offset: int, data: bytes,
                              delays: Sequence[float]) -> int | None:
    """Try :meth:`~.mutable.MutableFileNode.update` in place, on a fresh write-mode
    servermap each time, after a random wait below each of ``delays`` for every lost
    test-and-set race. None when done, else the offset to publish a whole version at (the
    file is empty, or the layout cannot take it in place).

    :raises UncoordinatedWriteError: when every attempt lost its race.
    """
    await node.lock.acquire()
    try:
        where: int | None = None  # the offset, once fixed against the length first read
        last: Exception | None = None
        for attempt, delay in enumerate(delays):
            if delay:
                await deferLater(node.client.clock, delay * random.random(), lambda: None)
            smap, probe = await node._servermap(want_private_key=True)
            best = smap.best_recoverable_version()
            if best is None:
                return offset if where is None else where
            if where is None:
                where = min(offset, best.data_length)
            node.needed, node.total = best.needed, best.total
            keys = await node._keys(smap, probe)
            try:
                with node.client.history.record("publish", node.storage_index, len(data),
                                                node.client.clock):
                    updated = await update_in_place(node, smap, probe, keys,
                                                    min(where, best.data_length), data)
            except UpdateNotInPlace as why:
                log.msg(f"update of {node.storage_index.hex()[:8]} at {where}: {why}; "
                        f"publishing a whole version")
                return where
            except UncoordinatedWriteError as error:
                last = error
                log.msg(f"update of {node.storage_index.hex()[:8]} lost a race (attempt "
                        f"{attempt + 1} of {len(delays)}); retrying")
                continue
            node._count("published", len(data))
            node.share_size = updated.version.offsets[-1]
            return None
        assert last is not None
        raise last
    finally:
        node.lock.release()


async def update_in_place(node: "MutableFileNode", smap: ServerMap, probe: Probe,
                          keys: MutableKeys, offset: int, data: bytes) -> UpdatedVersion:
    """Write ``data`` at ``offset`` (at most the current length) into the best version.

    :raises UpdateNotInPlace: when this update needs a whole publish (nothing written).
    :raises UncoordinatedWriteError: when another writer changed a share meanwhile.
    :raises UnrecoverableFile: when fewer than k shares could be written.
    """
    best = smap.best_recoverable_version()
    if best is None:
        raise UnrecoverableFile("no recoverable version of this mutable file was found")
    if smap.versions() != {best} or smap.bad_shares():
        raise UpdateNotInPlace("the servermap shows other versions or corrupt shares")
    holders = smap.shares_of(best)
    if set(holders) != set(range(best.total)):
        raise UpdateNotInPlace(f"share numbers {sorted(set(range(best.total)) - set(holders))} "
                               "were not found")
    plan = plan_update(best, offset, len(data))
    trees, old_segments = await _read_old(node, plan, holders, probe)
    changed = plan.changed_segments
    salts = [os.urandom(16) for _ in changed]
    pss_salt = None  # a random one, drawn as OpenSSL signs
    seqnum = smap.next_seqnum()

    def encode() -> UpdatedVersion:
        segments = [splice_segment(plan, n, old_segments.get(n, b""), data) for n in changed]
        return encode_update(plan, keys, segments, salts, trees, pss_salt, seqnum=seqnum)
    if len(data) > THREAD_THRESHOLD:
        updated = await deferToThread(encode)
    else:
        updated = encode()
    await _write(node, smap, probe, keys, updated)
    return updated


async def _read_old(node: "MutableFileNode", plan: UpdatePlan, holders: dict[int, set[Any]],
                    probe: Probe) -> tuple[dict[int, dict[int, bytes]], dict[int, bytes]]:
    """Each share's checked tree nodes and the kept old segments' plaintext."""
    version = plan.version
    tree_reads = plan.tree_reads()
    kept = plan.old_segments_needed()
    sources = sorted(holders)[:version.needed]
    calls, asked = [], []
    for shnum in sorted(holders):
        sid = sorted(holders[shnum])[0]
        readv = [(0, len(version.checkstring))] + tree_reads
        if shnum in sources:
            readv += [plan.block_read(segnum) for segnum in kept]
        server = probe.servers[sid]
        calls.append((server, server.storage.slot_readv(node.storage_index, [shnum], readv)))
        asked.append((shnum, sid))
    answers = await gather(calls, "a slot read")
    trees: dict[int, dict[int, bytes]] = {}
    entries: dict[int, dict[int, bytes]] = {segnum: {} for segnum in kept}
    base = plan.old_offsets.block_hash_tree
    for (shnum, sid), (ok, result) in zip(asked, answers):
        if not ok or not result.get(shnum):
            raise UpdateNotInPlace(f"share {shnum} could not be read")
        if result[shnum][0] != version.checkstring:
            # Not corrupt: another writer's version replaced it since the servermap update.
            raise UncoordinatedWriteError(f"share {shnum} was replaced since the servermap "
                                          "update")
        pieces = result[shnum][1:]
        nodes: dict[int, bytes] = {}
        for (start, length), piece in zip(tree_reads, pieces):
            first = (start - base) // HASH_SIZE
            for j in range(length // HASH_SIZE):
                nodes[first + j] = piece[HASH_SIZE * j:HASH_SIZE * (j + 1)]
        try:
            header = parse_header(probe.data[(sid, shnum)])
            span = header.share_hash_chain_range()
            chain = parse_chain(probe.data[(sid, shnum)][span[0]:span[0] + span[1]])
            old_tree_root(plan, shnum, nodes, chain)
        except (CorruptShare, LayoutInvalid) as error:
            node._report(probe.servers[sid], shnum, str(error))
            raise UpdateNotInPlace(f"share {shnum}: {error}") from None
        trees[shnum] = nodes
        for segnum, piece in zip(kept, pieces[len(tree_reads):]):
            entries[segnum][shnum] = piece
    old_segments: dict[int, bytes] = {}
    for segnum in kept:
        leaves = {n: old_leaf(plan, trees[n], segnum) for n in entries[segnum]}
        try:
            old_segments[segnum] = decode_old_segment(plan, node.readkey, segnum,
                                                      entries[segnum], leaves)
        except CorruptShare as error:
            sid = sorted(holders[error.shnum])[0]
            node._report(probe.servers[sid], error.shnum, str(error))
            raise UpdateNotInPlace(str(error)) from None
    return trees, old_segments


async def _write(node: "MutableFileNode", smap: ServerMap, probe: Probe, keys: MutableKeys,
                 updated: UpdatedVersion) -> None:
    """Every share's changed pieces, one test-and-set call per server, all at once."""
    client = node.client
    test = checkstring_test(updated.old_checkstring)
    per_server: dict[str, dict[int, Any]] = {}
    for (sid, shnum) in sorted(smap.shares(), key=lambda item: (str(item[0]), item[1])):
        per_server.setdefault(str(sid), {})[shnum] = ([test], list(updated.writes[shnum]), None)
    calls, targets = [], []
    for sid, tw in per_server.items():
        server = probe.servers[sid]
        lease = client.lease_secrets.for_server(node.storage_index, server.lease_seed)
        secrets = (keys.write_enabler(server.lease_seed), lease.renew, lease.cancel)
        calls.append((server, server.storage.slot_testv_and_readv_and_writev(
            node.storage_index, secrets, tw, read_vector(node.format))))
        targets.append((server, set(tw)))
    answers = await gather(calls, "a slot write")
    judge_write_answers(targets, answers, updated.checkstring, updated.version.needed)


def judge_write_answers(targets: list[tuple[Any, set[int]]], answers: list[tuple[bool, Any]],
                        checkstring: bytes, needed: int) -> None:
    """Judge the answers of a publish's or an update's test-and-set calls.

    :param targets: per call, the server and the share numbers written there.
    :param checkstring: the new version's.
    :raises UncoordinatedWriteError: when a test failed or a server holds a
        version we did not know of.
    :raises UnrecoverableFile: when fewer than ``needed`` shares were written.
    """
    written: set[int] = set()
    conflict: str | None = None
    for (server, shnums), (ok, result) in zip(targets, answers):
        if not ok:
            if not result.check(ServerGone):
                log.msg(f"slot write to {server.nickname!r} failed: {result.getErrorMessage()}")
            continue
        wrote, read_data = result
        try:
            check_write_answer(wrote, read_data, shnums, checkstring)
        except UncoordinatedWriteError as error:
            conflict = f"{server.nickname or server.server_id.decode()}: {error}"
            continue
        written |= shnums
    if conflict is not None:
        raise UncoordinatedWriteError(conflict)
    if len(written) < needed:
        raise UnrecoverableFile(f"only {len(written)} shares could be written, "
                                f"{needed} are needed")
