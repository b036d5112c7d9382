"""Mutable files on the grid: create, read, overwrite and modify with test-and-set.

The network shell around :mod:`tahoe.mutable` (``reference/mutable-dirnodes.md``
§6-§7):

* **servermap update**: ``slot_readv(SI, [], [(0, 4000)])`` to the servers of
  the permuted ring, all at once; every share's header, key and signature are
  checked; the versions found go into a :class:`~tahoe.mutable.servermap.ServerMap`.
  One round trip; the probe usually holds a small file's whole share.
  A node that knows the file's shares are longer than the probe (up to
  :data:`WHOLE_SHARE_PROBE`) asks for whole shares instead.
* **retrieve**: the best recoverable version from the k lowest share numbers
  (whole shares, read in one more call only when the probe did not cover them).
  When another writer replaced them in between (their checkstring is another
  version's), or too few turn out good, the read updates the servermap and
  tries again (:data:`READ_ATTEMPTS`), leaving out shares it found corrupt;
  replaced shares are not reported corrupt.
* **publish**: every share of the new version in one
  ``slot_testv_and_readv_and_writev`` per server, all at once, each tested
  against the checkstring the servermap saw in that very share. A modify is
  therefore two round trips: the servermap read and the test-and-set write.
  A node whose last publish of a file went through on every server knows
  what each of them now holds, so its next modify (within
  :data:`WRITTEN_STANDS_FOR` seconds) starts from those contents, without the
  read: one round trip. The test-and-set keeps this safe: if anyone wrote in
  between, the tests fail, nothing of ours stands, and the modify retries on a
  fresh servermap, as for any lost race.
* **update** at an offset of an MDMF file (:mod:`.mutable_update`): after the
  servermap update, one read of the touched segments' blocks and hash tree
  nodes, and one test-and-set write per server of only the changed pieces;
  SDMF files and the cases the layout cannot take in place are published whole.
* A lost race (:class:`UncoordinatedWriteError`) is retried on a fresh
  servermap by :meth:`MutableFileNode.modify` (:data:`RETRY_DELAYS`,
  :data:`RETRY_PATIENCE`), which applies the change again; a blind overwrite
  reports it.

RSA work (key generation, private-key import) runs in worker threads; a
small pool of pre-generated keys keeps ``create`` from waiting on it.

Each servermap update, retrieve and publish appears in the operation history
(``/status``: ``mapupdate`` with Tahoe's mode, ``retrieve``, ``publish``), and
retrieves and publishes are counted in the ``mutable.*`` statistics
(``reference/frontends.md`` §5), directories included.
"""
from __future__ import annotations

import itertools
import os
import random
from collections.abc import Awaitable, Callable
from typing import Any

from attrs import define
from twisted.internet.defer import Deferred, DeferredLock
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from twisted.python import log

from ..caps.mutable import MDMFReadCap, MDMFWriteCap, MutableFormat, SSKReadCap, SSKWriteCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..crypto.rsa import SigningKey
from ..mutable.encoder import encode_version, salts_needed
from ..mutable.errors import (MutableFormatError, NotEnoughShares, UncoordinatedWriteError,
                              UnrecoverableFile)
from ..mutable.keys import MutableKeys, decrypt_private_key_der, readkey_from_writekey
from ..mutable.layout import MAX_HEADER_SIZE, PROBE_SIZE, parse_header, private_key_range
from ..mutable.reader import decode_shares
from ..mutable.servermap import ServerMap
from ..mutable.slot_writes import plan_publish, read_vector
from ..mutable.update import splice_bytes
from ..mutable.version import VersionInfo
from ..stats.registry import Statistics
from .history import OperationHistory
from .keypool import KeyPool
from .broker import StorageBroker, StorageServerHandle
from .mapupdate import Probe, report_corrupt, survey
from .mutable_update import judge_write_answers, update_with_retries
from .stragglers import gather

WriteCap = SSKWriteCap | MDMFWriteCap
ReadCap = SSKReadCap | MDMFReadCap | SSKWriteCap | MDMFWriteCap
#: The random back-off before each attempt of a modify that lost a test-and-set race (or
#: whose read lost every race it ran), as upper bounds (seconds; the wait is drawn
#: uniformly below, so two writers that both lost fall out of step). Tahoe's modifier
#: backs off 1 s, then e times more, and gives up after 4 tries. A node that writes a
#: directory without pause (another gateway's queue of coalesced changes) starts its
#: next publish as soon as its last one lands, a little ahead of the loser, which learns
#: of its loss only then; a loser that waits longer only hands it more rounds. So the
#: loser comes back at once, a recent winner makes way (:data:`CONTENDED_WAIT`), and a
#: modify keeps trying after these attempts, at the last bound, until
#: :data:`RETRY_PATIENCE` seconds have passed: a node that keeps winning stops when its
#: own queue runs dry. Every attempt applies the change again to the contents it read,
#: so more attempts lose nothing; they only keep a change from failing.
RETRY_DELAYS = (0.0, 0.01, 0.02, 0.04) + (0.05,) * 16
RETRY_PATIENCE = 60.0
#: For :data:`CONTENDED_FOR` seconds after a modify of a file here lost a race, each new
#: modify of that file here first waits a random time below this (seconds), so the loser
#: of a round against it, back at once, gets ahead of it.
CONTENDED_WAIT = 0.3
CONTENDED_FOR = 3.0
#: Servermap updates a read makes at most when the version it chose is replaced under it.
READ_ATTEMPTS = 8
#: A node that has read or written a file whose shares are longer than the 4000-byte
#: probe, but no longer than this, asks this much (up to twice their last length) of
#: each share in its servermap updates: whole shares in one round trip, with nothing
#: left to fetch, so no write can replace them between the two reads. Directories of a
#: few hundred entries, written often, are the case; bytes past a share's end cost nothing.
WHOLE_SHARE_PROBE = 64 * 1024
#: Seconds after a publish through this node that went through on every server during
#: which a modify starts from what it wrote instead of a servermap update.
WRITTEN_STANDS_FOR = 30.0


@define
class _Written:
    """What a publish through this node left on every server it wrote to."""

    contents: bytes
    servermap: ServerMap
    keys: MutableKeys
    at: float


class MutableClient:
    """Creates and opens mutable files through one broker.

    :param params: the default k and N for new files (``needed``, ``total``).
    :param history: where operations are recorded (a private one by default).
    :param stats: where retrieves and publishes are counted, if anywhere.
    """

    def __init__(self, broker: StorageBroker, lease_secrets: ClientLeaseSecrets,
                 needed: int, total: int, clock: Any, keypool: KeyPool | None = None,
                 history: OperationHistory | None = None,
                 stats: Statistics | None = None) -> None:
        self.broker = broker
        self.history = history if history is not None else OperationHistory()
        self.stats = stats
        self.lease_secrets = lease_secrets
        self.needed = needed
        self.total = total
        self.clock = clock
        self.keypool = keypool or KeyPool()
        self._nodes: dict[bytes, MutableFileNode] = {}
        self._signing_keys: dict[bytes, SigningKey] = {}

    def open(self, cap: ReadCap) -> "MutableFileNode":
        """The node for a mutable file (one per storage index, so writes serialize)."""
        node = self._nodes.get(cap.storage_index)
        if node is None or (isinstance(cap, (SSKWriteCap, MDMFWriteCap))
                            and not node.writable):
            node = MutableFileNode(self, cap)
            self._nodes[cap.storage_index] = node
        return node

    async def create(self, data: bytes, file_format: MutableFormat = MutableFormat.SDMF,
                     signing_key: SigningKey | None = None) -> WriteCap:
        """Publish a new mutable file (seqnum 1, no read first) and return its write cap."""
        key = signing_key or await self.keypool.get()
        keys = MutableKeys.from_signing_key(key)
        cap = keys.write_cap(file_format)
        self._signing_keys[keys.storage_index] = key
        node = self.open(cap)
        await node.publish(data, ServerMap(), keys)
        return cap

    def servers_for(self, storage_index: bytes) -> list[StorageServerHandle]:
        """Connected servers in permuted-ring order for a storage index."""
        return self.broker.ring(storage_index)


class MutableFileNode:
    """One mutable file, readable (and writable with a write cap)."""

    def __init__(self, client: MutableClient, cap: ReadCap) -> None:
        self.client = client
        self.cap = cap
        self.writable = isinstance(cap, (SSKWriteCap, MDMFWriteCap))
        self.storage_index = cap.storage_index
        self.fingerprint = cap.fingerprint
        self.readkey = readkey_from_writekey(cap.writekey) if self.writable else cap.readkey
        self.format = MutableFormat.MDMF if isinstance(cap, (MDMFWriteCap, MDMFReadCap)) \
            else MutableFormat.SDMF
        self.lock = DeferredLock()
        self.needed: int | None = None
        self.total: int | None = None
        self.share_size = 0  # of the version last read or written here
        self.lost_race_at: float | None = None  # when a modify here last lost a race
        self._written: _Written | None = None  # the last publish here, if it went through

    # -- reading

    def _probe_size(self) -> int:
        """What a servermap update asks of each share (see :data:`WHOLE_SHARE_PROBE`)."""
        if PROBE_SIZE < self.share_size <= WHOLE_SHARE_PROBE:
            return min(2 * self.share_size, WHOLE_SHARE_PROBE)
        return PROBE_SIZE

    async def _servermap(self, want_private_key: bool) -> tuple[ServerMap, Probe]:
        """Ask the servers of the ring (up to 2N + k) for every share's header (one round trip)."""
        servers = self.client.servers_for(self.storage_index)
        limit = 2 * (self.total or self.client.total) + (self.needed or self.client.needed)
        mode = "MODE_WRITE" if want_private_key else "MODE_READ"
        with self.client.history.record("mapupdate", self.storage_index, None,
                                        self.client.clock, mode):
            return await survey(self.storage_index, self.fingerprint, servers[:max(limit, 1)],
                                probe_size=self._probe_size())

    def _count(self, action: str, size: int) -> None:
        """Count one retrieve or publish (``action``) of ``size`` bytes."""
        if self.client.stats is not None:
            self.client.stats.count(f"mutable.files_{action}")
            self.client.stats.count(f"mutable.bytes_{action}", size)

    def _report(self, server: StorageServerHandle, shnum: int, reason: str) -> None:
        report_corrupt(server, b"mutable", self.storage_index, shnum, reason)

    async def _retrieve(self, smap: ServerMap, probe: Probe,
                        found_bad: dict[tuple[str, int], VersionInfo]) -> bytes:
        """The best recoverable version's plaintext, from whole shares.

        :param found_bad: (server, share number) -> the version it claimed, for every
            share found corrupt (added to, so a retry on a fresh servermap skips them).
        """
        with self.client.history.record("retrieve", self.storage_index, None,
                                        self.client.clock) as op:
            plaintext = await self._retrieve_best(smap, probe, found_bad)
            op.size = len(plaintext)
        self._count("retrieved", len(plaintext))
        return plaintext

    async def _retrieve_best(self, smap: ServerMap, probe: Probe,
                             found_bad: dict[tuple[str, int], VersionInfo]) -> bytes:
        best = smap.best_recoverable_version()
        if best is None:
            found = len({n for (_, n) in smap.shares()})
            if not smap.shares() and not smap.bad_shares():
                raise UnrecoverableFile(f"no shares of this mutable file were found on "
                                        f"{len(probe.answered)} servers")
            raise UnrecoverableFile(f"no recoverable version: {found} distinct good shares "
                                    f"found")
        self.needed, self.total = best.needed, best.total
        holders = smap.shares_of(best)
        order = sorted(holders)
        shares: dict[int, bytes] = {}
        sources: dict[int, str] = {}
        tried: set[int] = set()
        bad: dict[int, str] = {}
        batch = best.needed + 2
        while True:
            # k + 2 shares first; then, while too few are good, as many more as are missing.
            chosen = [n for n in order if n not in tried][:batch]
            tried.update(chosen)
            await self._fetch_whole(best, holders, probe, chosen, shares, sources)
            usable = {n: data for n, data in shares.items() if n not in bad}
            try:
                if best.data_length > 256 * 1024:
                    decoded = await deferToThread(decode_shares, self.readkey, self.fingerprint,
                                                  usable, best)
                else:
                    decoded = decode_shares(self.readkey, self.fingerprint, usable, best)
            except NotEnoughShares as error:
                bad.update(error.bad)
                # Shares replaced by a newer version mean a write got in since the
                # servermap update: the caller updates it and reads again.
                if error.replaced or tried.issuperset(order):
                    self._report_all(sources, probe, bad, best, found_bad)
                    raise
                batch = max(best.needed - error.found, 1)
                continue
            self._report_all(sources, probe, {**bad, **decoded.corrupt}, best, found_bad)
            self.share_size = best.offsets[-1]
            return decoded.plaintext

    async def _fetch_whole(self, version: VersionInfo, holders: dict[int, Any], probe: Probe,
                           shnums: list[int], shares: dict[int, bytes],
                           sources: dict[int, str]) -> None:
        """Put the whole share of each of ``shnums`` into ``shares`` (from the probe's bytes
        when they hold all of it, else with one ``slot_readv`` each, all at once), and the
        server it came from into ``sources``; a share whose server fails to answer is left
        out."""
        reads = []
        eof = version.offsets[-1]
        for shnum in shnums:
            sid = sorted(holders[shnum])[0]
            data = probe.data.get((sid, shnum), b"")
            if len(data) >= eof or len(data) < probe.size:
                shares[shnum] = data
                sources[shnum] = sid
            else:
                reads.append((shnum, sid))
        if reads:
            answers = await gather(
                [(probe.servers[sid],
                  probe.servers[sid].storage.slot_readv(self.storage_index, [shnum], [(0, eof)]))
                 for shnum, sid in reads], "a share read")
            for (shnum, sid), (ok, result) in zip(reads, answers):
                if ok and result.get(shnum):
                    shares[shnum] = result[shnum][0]
                    sources[shnum] = sid

    def _report_all(self, sources: dict[int, str], probe: Probe, corrupt: dict[int, str],
                    version: VersionInfo, found_bad: dict[tuple[str, int], VersionInfo]
                    ) -> None:
        """Report each corrupt share to the one server it was read from, and note it."""
        for shnum, reason in corrupt.items():
            sid = sources.get(shnum)
            if sid is not None and (sid, shnum) not in found_bad:
                found_bad[(sid, shnum)] = version
                self._report(probe.servers[sid], shnum, reason)

    async def _read(self, want_private_key: bool) -> tuple[bytes, ServerMap, Probe]:
        """The best recoverable version's plaintext, and the servermap it was chosen from.

        A retrieve that finds too few good shares of the version it chose (their
        servers replaced them with a newer version meanwhile, or lost them) updates
        the servermap and tries again, up to :data:`READ_ATTEMPTS` servermap updates,
        leaving out the shares it found corrupt. So a read does not fail while a
        version is recoverable, however often the file is written meanwhile.

        :raises UnrecoverableFile: when no version can be rebuilt.
        """
        found_bad: dict[tuple[str, int], VersionInfo] = {}
        attempt = 0
        while True:
            attempt += 1
            smap, probe = await self._servermap(want_private_key)
            seen = smap.shares()
            for (sid, shnum), version in found_bad.items():
                if seen.get((sid, shnum)) == version:  # still that corrupt share
                    smap.mark_bad(sid, shnum, version.signed_prefix)
            try:
                return await self._retrieve(smap, probe, found_bad), smap, probe
            except NotEnoughShares as error:
                if attempt >= READ_ATTEMPTS:
                    raise
                log.msg(f"read of {self.storage_index.hex()[:8]} (attempt {attempt} of "
                        f"{READ_ATTEMPTS}): {error}; updating the servermap and reading again")

    async def read(self) -> bytes:
        """The current contents (the best recoverable version).

        :raises UnrecoverableFile: when no version can be rebuilt.
        """
        plaintext, _, _ = await self._read(want_private_key=False)
        return plaintext

    async def size(self) -> int:
        """The size in bytes of the current contents: one servermap update, no download.

        :raises UnrecoverableFile: when no version can be rebuilt.
        """
        smap, _ = await self._servermap(want_private_key=False)
        best = smap.best_recoverable_version()
        if best is None:
            raise UnrecoverableFile("no recoverable version of this mutable file was found")
        return best.data_length

    # -- writing

    async def _keys(self, smap: ServerMap, probe: Probe) -> MutableKeys:
        """The file's keys, from the cache or the encrypted private key in a share."""
        assert self.writable
        cached = self.client._signing_keys.get(self.storage_index)
        if cached is not None:
            return MutableKeys.from_signing_key(cached)
        writekey = self.cap.writekey  # type: ignore[union-attr]
        seen = smap.shares()
        for (sid, shnum), data in sorted(probe.data.items()):
            if (sid, shnum) not in seen:
                continue
            try:
                blob = await self._encrypted_key(probe.servers[sid], shnum, data)
            except Exception as error:  # the server failed to answer: try another share
                log.msg(f"reading the private key from {probe.servers[sid].nickname!r} "
                        f"failed: {error!r}")
                continue
            try:
                der = decrypt_private_key_der(writekey, blob)
                key = await deferToThread(SigningKey.from_der, der)
            except (MutableFormatError, ValueError) as error:
                self._report(probe.servers[sid], shnum, f"bad private key: {error}")
                continue
            self.client._signing_keys[self.storage_index] = key
            return MutableKeys.from_signing_key(key)
        raise UnrecoverableFile("no share holds a usable copy of the private key")

    async def _encrypted_key(self, server: StorageServerHandle, shnum: int, data: bytes) -> bytes:
        """A share's encrypted private key: from ``data`` (its first bytes, as the servermap
        update read them) when they hold it, else read from the server.

        Every version holds the same encrypted key, but a write since ``data`` was read
        may have moved it. So the share's header is read again after the key, in the same
        call: the key read is the share's own only if that header puts it where it was
        read; if not, the key is read again where the new header says, a few times.
        """
        span = private_key_range(parse_header(data))
        blob = data[span[0]:span[0] + span[1]]
        if len(blob) == span[1]:
            return blob
        for _ in range(4):
            more = await server.storage.slot_readv(self.storage_index, [shnum],
                                                   [span, (0, MAX_HEADER_SIZE)])
            blob, header = (more.get(shnum) or [b"", b""])
            now = private_key_range(parse_header(header))
            if now == span:
                return blob
            span = now
        raise UncoordinatedWriteError(f"share {shnum} on {server.nickname!r} changed at every "
                                      f"read of its private key")

    async def publish(self, data: bytes, smap: ServerMap, keys: MutableKeys) -> None:
        """Write a new version over what ``smap`` saw (all servers at once, test-and-set).

        :raises UncoordinatedWriteError: when another writer got in between.
        """
        with self.client.history.record("publish", self.storage_index, len(data),
                                        self.client.clock):
            await self._publish(data, smap, keys)
        self._count("published", len(data))

    async def _publish(self, data: bytes, smap: ServerMap, keys: MutableKeys) -> None:
        client = self.client
        needed = self.needed or client.needed
        total = self.total or client.total
        salts = [os.urandom(16) for _ in range(salts_needed(self.format, len(data), needed))]
        args = (self.format, data, keys)
        kwargs = dict(seqnum=smap.next_seqnum(), needed=needed, total=total, salts=salts,
                      pss_salt=None)
        if len(data) > 256 * 1024:
            encoded = await deferToThread(encode_version, *args, **kwargs)
        else:
            encoded = encode_version(*args, **kwargs)
        servers = {s.server_id.decode("ascii"): s for s in client.broker.upload_candidates(self.storage_index)}
        ring = list(servers)
        plan = plan_publish(encoded, smap, ring)
        calls, targets = [], []
        for sid, writes in plan.items():
            server = servers.get(sid)
            if server is None:
                continue
            lease = client.lease_secrets.for_server(self.storage_index, server.lease_seed)
            secrets = (keys.write_enabler(server.lease_seed), lease.renew, lease.cancel)
            tw = {w.shnum: w.to_wire() for w in writes}
            calls.append((server, server.storage.slot_testv_and_readv_and_writev(
                self.storage_index, secrets, tw, read_vector(self.format))))
            targets.append((server, set(tw)))
        self._written = None
        answers = await gather(calls, "a slot write")
        judge_write_answers(targets, answers, encoded.checkstring, needed)
        self.needed, self.total = needed, total
        self.share_size = len(encoded.shares[0].data)
        if len(targets) == len(plan) and all(ok for ok, _ in answers):
            written = ServerMap()
            for server, shnums in targets:
                for shnum in shnums:
                    written.add_share(server.server_id.decode("ascii"), shnum, encoded.version)
            self._written = _Written(data, written, keys, client.clock.seconds())

    async def overwrite(self, data: bytes) -> None:
        """Replace the contents (a blind write: a lost race is reported, not retried)."""
        await self.lock.acquire()
        try:
            smap, probe = await self._servermap(want_private_key=True)
            if smap.best_recoverable_version() is not None:
                best = smap.best_recoverable_version()
                assert best is not None
                self.needed, self.total = best.needed, best.total
            keys = await self._keys(smap, probe)
            await self.publish(data, smap, keys)
        finally:
            self.lock.release()

    async def update(self, offset: int, data: bytes) -> None:
        """Write ``data`` at ``offset`` (an offset at or past the end appends).

        An MDMF file is updated in place (:mod:`.mutable_update`): only the segments
        the write touches are read, re-encoded and written, with the hash tree nodes,
        chain, signature and header that change. A lost test-and-set race is tried
        again on a fresh servermap (:data:`RETRY_DELAYS`); rewriting the same bytes
        at the same offset is harmless if the lost attempt won after all. An SDMF
        file, or a case the share layout cannot take in place
        (:class:`~tahoe.mutable.update.UpdateNotInPlace`), is read whole and
        published whole through :meth:`modify`.

        :raises UncoordinatedWriteError: when every attempt lost its race.
        """
        if not data:
            return
        self._written = None  # an update in place changes shares without a whole publish
        where: int | None = None  # the offset, once fixed against the length first read
        if self.format is MutableFormat.MDMF:
            where = await update_with_retries(self, offset, data, RETRY_DELAYS)
            if where is None:
                return
        start = offset if where is None else where
        await self.modify(lambda old, first_time: splice_bytes(old, data, start))

    async def modify(self, modifier: Callable[[bytes, bool], Awaitable[bytes | None] | bytes | None]
                     ) -> bytes:
        """Read, apply ``modifier(old, first_time)``, and publish; retry lost races.

        ``modifier`` returns the new contents, or None (or the old contents) for
        no change, which publishes nothing on the first attempt. A publish that
        loses a test-and-set race, or a read that loses every race it runs, is
        tried again after a back-off (:data:`RETRY_DELAYS`, then for up to
        :data:`RETRY_PATIENCE` s), on a fresh read and with ``first_time`` False.
        A change counts as made only once a publish of it met no conflict. A lost
        publish may still have won on some servers, its contents now the best
        version: a retry that reads exactly those contents publishes them again,
        without applying the change a second time. The first attempt may start from
        what this node's last publish wrote (:data:`WRITTEN_STANDS_FOR`) instead of a
        read; a change that finds nothing to do there is tried again on a read.

        :returns: the contents now in place.
        """
        await self.lock.acquire()
        try:
            clock = self.client.clock
            if self.lost_race_at is not None \
                    and clock.seconds() - self.lost_race_at < CONTENDED_FOR:
                await deferLater(clock, CONTENDED_WAIT * random.random(), lambda: None)
            last: Exception | None = None
            attempted: bytes | None = None  # what the last lost publish wrote
            started = clock.seconds()
            checking = False  # whether a read is to confirm a no-change found in what we wrote
            for attempt in itertools.count():
                if attempt >= len(RETRY_DELAYS) and clock.seconds() - started > RETRY_PATIENCE:
                    break
                delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
                if delay and not checking:
                    await deferLater(clock, delay * random.random(), lambda: None)
                checking = False
                written, self._written = self._written, None
                keys: MutableKeys | None = None
                if attempt == 0 and written is not None \
                        and clock.seconds() - written.at <= WRITTEN_STANDS_FOR:
                    old, smap, keys = written.contents, written.servermap, written.keys
                else:
                    try:
                        old, smap, probe = await self._read(want_private_key=True)
                    except NotEnoughShares as error:  # the read lost every race it ran
                        last = error
                        log.msg(f"modify of {self.storage_index.hex()[:8]}: read failed "
                                f"(attempt {attempt + 1}): {error}; retrying")
                        continue
                first_time = attempted is None
                if old == attempted:
                    # The lost publish is the best version this read found: it won on
                    # some servers. Only a publish without conflict may stand for the
                    # change (a write read before it may still land, built on contents
                    # without it), so the same contents go out again, the change not
                    # applied twice.
                    new = old
                else:
                    result = modifier(old, first_time)
                    new = await result if isinstance(result, (Deferred, Awaitable)) else result  # type: ignore[misc]
                    if new is None or (new == old and first_time):
                        if keys is not None:
                            # No publish, so no test-and-set confirms what we wrote is
                            # still there: the servers are read, and the change is tried
                            # on what they hold.
                            checking = True
                            continue
                        return old
                # Published over the servermap the contents were read from: a write
                # since then fails its test-and-set, and the change is applied again.
                if keys is None:
                    keys = await self._keys(smap, probe)
                try:
                    await self.publish(new, smap, keys)
                    return new
                except UncoordinatedWriteError as error:
                    last = error
                    attempted = new
                    self.lost_race_at = clock.seconds()
                    log.msg(f"modify of {self.storage_index.hex()[:8]} lost a race (attempt "
                            f"{attempt + 1}); retrying")
            assert last is not None
            raise last
        finally:
            self.lock.release()

