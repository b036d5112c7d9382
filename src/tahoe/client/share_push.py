"""Pushing one CHK file's shares: allocations, writes and closes, pipelined.

What :class:`~tahoe.client.uploader.Uploader` runs for each attempt at an upload:

1. ``allocate_buckets`` goes to every chosen server at once. Servers are
   taken in permuted-ring order, deterministically
   (:func:`~tahoe.client.placement.place_shares`); existing shares are
   learnt from the answers, not from a separate round.
2. The allocation hands back a writer per share at once, and each share's
   bytes are given to it as soon as they are encoded: over HTTPS to a server
   that takes pipelined requests they leave right behind the allocation, on
   the same connection (a small file is one write per share, and the upload
   costs one round trip); over Foolscap they wait for the answer (two round
   trips). ``close`` follows the last write at once. A window of
   unacknowledged bytes per server bounds memory whatever the file size.
   Sources above :data:`INLINE_LIMIT` are encoded in a worker thread.
   Smaller ones are encoded whole first, and each server is sent its shares
   with their allocation in one call (``allocate_and_write``): over HTTPS,
   one write and one answer per server, no writer per share.
3. What was handed over before the allocation answered is kept until it
   does: a share the server refuses, or all of a server's shares if it fails
   before answering, go to the next unused server in ring order; a server
   that fails later is dropped. The upload succeeds if the shares that were
   placed still reach the happiness target; otherwise every open writer is
   aborted. The servers that refused shares they do not hold (busy with
   another upload of the same file) are remembered for the uploader's retry.
4. A server that does not answer its allocation is given up after
   :data:`ALLOCATE_TIMEOUT`, or :data:`STRAGGLER_GRACE` after the upload became
   happy without it (a hung server then costs an upload seconds, not half a
   minute), and its shares are replaced as in 3. The broker is told
   (:meth:`~tahoe.client.broker.StorageServerHandle.suspect`): no upload places
   shares on the server until it answers a ping, and unless it answers within
   :data:`~tahoe.client.broker.PING_TIMEOUT` it is disconnected. The same for a
   server that stops taking share data: while the upload waits on its window or
   its closes, :data:`STRAGGLER_GRACE` without progress from it, when the upload
   can be happy without it, fails it (before: the connection's response
   timeout, a minute).

Facts: ``reference/storage-protocol.md`` §8, ``reference/immutable.md`` §7.5, §11.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from attrs import define, field
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.threads import deferToThread
from twisted.python import log
from twisted.python.failure import Failure

from ..caps.immutable import CHKReadCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..immutable.encoder import EncodedSegment, EncodedTrailer, ImmutableEncoder
from ..immutable.params import EncodingParameters
from .broker import StorageBroker, StorageServerHandle, maximum_immutable_share_size
from .errors import UploadUnhappinessError
from .placement import place_shares, servers_of_happiness
from .storage_api import ShareNotAllocated, quietly
from .stragglers import STRAGGLER_GRACE, AnswerDeadlines, unless_stalled
from .uploadable import Uploadable

#: Sources up to this size are hashed and encoded on the reactor thread.
INLINE_LIMIT = 256 * 1024
#: Unacknowledged (or not yet sendable) bytes allowed per server.
WINDOW_BYTES = 4 * 1024 * 1024
#: Largest single ``write`` call made from buffered data.
MAX_WRITE = 4 * 1024 * 1024
#: How long to wait for an ``allocate_buckets`` answer before replacing the server.
ALLOCATE_TIMEOUT = 30.0

#: Told how far an upload got: ``("hash", fraction)`` during the convergent-key pass
#: (called from a worker thread for large files), ``("push", fraction)`` as segments are
#: encoded and handed to the servers within the window.
UploadProgress = Callable[[str, float], None]


def no_progress(phase: str, fraction: float) -> None:
    """Ignore progress."""


@define
class _Push:
    """The shares one server is to hold, and the bytes on their way to it.

    ``unconfirmed`` keeps what was handed to the writers before the
    allocation answered, so that a share the server refuses (or a server
    that fails before answering) can be given to another server.
    """

    server: StorageServerHandle
    shares: set[int]
    writers: dict[int, Any] = field(factory=dict)
    already: set[int] = field(factory=set)
    pending: dict[int, list[tuple[int, bytes]]] = field(factory=dict)
    unconfirmed: dict[int, list[tuple[int, bytes]]] = field(factory=dict)
    allocated: bool = False
    failed: str | None = None
    outstanding: int = 0
    closed: set[int] = field(factory=set)
    closing: bool = False
    waiters: list[Deferred] = field(factory=list)
    #: The allocation's answer, while awaited; when it was asked for.
    answer: Deferred | None = None
    asked_at: float = 0.0
    #: Seconds the allocation went unanswered before the server was given up.
    silent: float | None = None
    #: When the server last acknowledged share data, or was last given something to do
    #: with nothing outstanding (asked for its allocation, sent data, asked to close).
    last_progress: float = 0.0

    @property
    def name(self) -> str:
        return self.server.server_id.decode("ascii")

    def backlog(self) -> int:
        buffered = sum(len(data) for chunks in self.pending.values() for _, data in chunks)
        return self.outstanding + buffered

    def wake(self) -> None:
        waiting, self.waiters = self.waiters, []
        for d in waiting:
            d.callback(None)


class SharePush:
    """The state of one CHK upload in flight: its allocations, writes and closes."""

    def __init__(self, broker: StorageBroker, secrets: ClientLeaseSecrets,
                 encoder: ImmutableEncoder, source: Uploadable,
                 params: EncodingParameters, clock: Any,
                 progress: UploadProgress = no_progress,
                 known_cap: CHKReadCap | None = None) -> None:
        self.encoder = encoder
        #: The file's cap, when an earlier attempt encoded it all: this attempt then asks
        #: the servers first and encodes only if one of them takes a share.
        self.known_cap = known_cap
        self.read_cap: CHKReadCap | None = None
        #: The trees, UEB and verify cap, once every segment was encoded.
        self.trailer: EncodedTrailer | None = None
        #: Whether share data may go out before the allocation answered.
        self.pipelined = known_cap is None
        #: Server name -> share numbers it refused without holding them.
        self.refused: dict[str, set[int]] = {}
        self.progress = progress
        self.source = source
        self.params = params
        self.clock = clock
        self.si = encoder.storage_index
        self.secrets = secrets
        self.pushes: dict[str, _Push] = {}
        self.share_owner: dict[int, _Push] = {}
        self.spares: list[StorageServerHandle] = []
        self.broker = broker
        self.aborted: str | None = None
        self.all_sent = False
        #: Every share's bytes, for a file encoded whole before its shares go out.
        self.whole: list[bytes] | None = None
        #: Allocations asked for and not yet answered (nor failed), and who waits for none.
        self._unanswered = 0
        self._answered_waiters: list[Deferred] = []
        self._closes: list[tuple[_Push, Deferred]] = []
        #: The share map and its happiness once every push ended (:meth:`_finish`).
        self._placed: tuple[dict[int, set[str]], int] | None = None
        self._deadlines = AnswerDeadlines(clock, ALLOCATE_TIMEOUT, self._answer_late)

    # -- selection

    def _candidates(self) -> list[StorageServerHandle]:
        size = self.encoder.share_length
        return self.broker.upload_candidates(
            self.si, lambda s: (s.maximum_immutable_share_size or 0) >= size)

    def _refusals(self) -> str:
        """How many servers took none of the shares they were asked for (for the error)."""
        refusing = [name for name, shnums in self.refused.items()
                    if shnums - self.pushes[name].already - self.pushes[name].closed]
        if not refusing:
            return ""
        n = len(refusing)
        return (f"; {n} server{'' if n == 1 else 's'} refused shares (no room left, read-only,"
                " or busy with another upload of the same file)")

    async def run(self) -> tuple[CHKReadCap | None, dict[int, frozenset[str]], int]:
        params = self.params
        candidates = self._candidates()
        if len(candidates) < params.happy:
            raise UploadUnhappinessError(
                f"shares could only be placed on {len(candidates)} servers (of "
                f"{len(self.broker.servers)} known), but happiness requires {params.happy}"
                + self.broker.not_candidates(self.encoder.share_length),
                len(candidates), len(candidates), params.happy)
        placement = place_shares([s.server_id.decode("ascii") for s in candidates],
                                 params.total, params.happy)
        by_id = {s.server_id.decode("ascii"): s for s in candidates}
        self.spares = [s for s in candidates if s.server_id.decode("ascii") not in placement.uploads]
        if self.pipelined and self.source.size <= INLINE_LIMIT:
            self._encode_whole()
        for sid, shares in placement.uploads.items():
            self._start_push(by_id[sid], set(shares))
        try:
            if self.known_cap is not None:
                await self._allocations_answered()
                if not any(push.writers for push in self.pushes.values() if not push.failed):
                    # Every share asked for is held already (or refused): nothing to send.
                    self.read_cap = self.known_cap
                    await self._finish()
                    return self._result()
            if self.whole is None:
                await self._encode_and_send()
            await self._finish()
        except BaseException:
            self._abort_all("upload failed")
            raise
        finally:
            self._deadlines.stop()
        return self._result()

    def _start_push(self, server: StorageServerHandle, shares: set[int]) -> _Push:
        push = _Push(server, shares)
        self.pushes[push.name] = push
        for shnum in shares:
            self.share_owner[shnum] = push
        secrets = self.secrets.for_server(self.si, server.lease_seed)
        if self.whole is not None:
            whole = self.whole
            d = server.storage.allocate_and_write(
                self.si, secrets.renew, secrets.cancel, {shnum: whole[shnum] for shnum in shares},
                self.encoder.share_length)
            answered = self._written
        else:
            allocation = server.storage.allocate_buckets(self.si, secrets.renew, secrets.cancel,
                                                         set(shares), self.encoder.share_length)
            push.writers = dict(allocation.writers)
            d = allocation.answer
            answered = self._allocated
        push.answer, push.asked_at = d, self.clock.seconds()
        push.last_progress = push.asked_at
        self._deadlines.watch(d)
        d.addCallbacks(answered, self._push_failed, callbackArgs=(push,), errbackArgs=(push,))
        self._unanswered += 1
        d.addBoth(self._one_answered, push)
        return push

    def _one_answered(self, result: Any, push: _Push) -> Any:
        """An allocation answered or failed (after its server's push took note)."""
        push.answer = None
        self._unanswered -= 1
        if not self._unanswered:
            waiters, self._answered_waiters = self._answered_waiters, []
            for waiter in waiters:
                waiter.callback(None)
        else:
            self._hasten_stragglers()
        return result

    def _hasten_stragglers(self) -> None:
        """Once the upload can be happy without the servers still silent, give each of
        them :data:`STRAGGLER_GRACE` more seconds, not the rest of its timeout."""
        silent = [p for p in self.pushes.values() if p.answer is not None and not p.failed]
        if silent and self._can_still_be_happy(without={p.name for p in silent}):
            for push in silent:
                assert push.answer is not None
                self._deadlines.hasten(push.answer, STRAGGLER_GRACE)

    def _answer_late(self, answer: Deferred) -> None:
        """An allocation's time is up (it is cancelled next): note how long its server was
        silent, and have the broker check on the server."""
        for push in self.pushes.values():
            if push.answer is answer and not push.failed:
                push.silent = self.clock.seconds() - push.asked_at
                push.server.suspect(f"no answer to an allocation in {push.silent:.1f} s")

    def _written(self, answer: tuple[frozenset[int], frozenset[int]], push: _Push) -> None:
        """A whole-share push answered: as an allocation's answer, whose shares are
        complete too."""
        if not push.failed:
            push.closed = set(answer[1])
        self._allocated(answer, push)

    def _allocated(self, answer: tuple[frozenset[int], frozenset[int]], push: _Push) -> None:
        if push.failed:
            return
        already, allocated = answer
        push.allocated = True
        push.last_progress = self.clock.seconds()
        push.already = set(already)
        for shnum in list(push.shares):
            sent = push.unconfirmed.pop(shnum, [])
            if shnum not in allocated:
                self._not_granted(push, shnum, already, sent)
        push.unconfirmed.clear()
        self._flush_push(push)
        if self.all_sent:
            self._close_push(push)
        push.wake()

    def _not_granted(self, push: _Push, shnum: int, already: frozenset[int],
                     sent: list[tuple[int, bytes]]) -> None:
        """A share the server did not take: held already, or refused (it then goes to a spare
        server, with the data ``sent`` to this one and what was still to go)."""
        push.shares.discard(shnum)
        push.writers.pop(shnum, None)
        chunks = sent + push.pending.pop(shnum, [])
        if shnum not in already:
            self.refused.setdefault(push.name, set()).add(shnum)
            self._reassign(shnum, chunks, f"{push.name} refused share {shnum}")
        elif self.share_owner.get(shnum) is push:
            # The server holds this share already: what is still to come for it goes
            # nowhere (kept, it would fill the window for good).
            del self.share_owner[shnum]

    def _reassign(self, shnum: int, chunks: list[tuple[int, bytes]], why: str) -> None:
        """Give a share whose data is all still here to the next spare server."""
        log.msg(f"upload {self.si.hex()[:8]}: {why}")
        self.share_owner.pop(shnum, None)
        while self.spares:
            server = self.spares.pop(0)
            if not server.is_connected:
                continue
            push = self._start_push(server, {shnum})
            if self.whole is None:
                push.pending[shnum] = chunks
                if self.all_sent:
                    self._flush_push(push)
            return

    def _push_failed(self, failure: Failure, push: _Push) -> None:
        if push.failed:
            return
        push.failed = (f"no answer in {push.silent:.1f} s" if push.silent is not None
                       else f"{type(failure.value).__name__}: {failure.getErrorMessage()}")
        log.msg(f"upload {self.si.hex()[:8]}: server {push.name} failed: {push.failed}")
        for writer in push.writers.values():
            quietly(writer.abort())
        if not push.allocated:
            # Nothing was confirmed: everything sent is still here, and can go elsewhere.
            for shnum in sorted(push.shares):
                self._reassign(shnum, push.unconfirmed.pop(shnum, []) + push.pending.pop(shnum, []),
                               f"replacing {push.name} for share {shnum}")
        push.pending.clear()
        push.unconfirmed.clear()
        push.outstanding = 0
        push.wake()
        if not self._can_still_be_happy():
            self.aborted = (f"server {push.name} failed ({push.failed}) and the remaining "
                            f"servers cannot reach happiness {self.params.happy}")

    # -- sending

    def _send(self, shnum: int, offset: int, data: bytes) -> None:
        """Queue share data; it goes out (coalesced) at the next :meth:`_flush_all`."""
        push = self.share_owner.get(shnum)
        if push is None or push.failed:
            return
        chunks = push.pending.setdefault(shnum, [])
        if chunks and chunks[-1][0] + len(chunks[-1][1]) == offset \
                and len(chunks[-1][1]) + len(data) <= MAX_WRITE:
            last_offset, last = chunks[-1]
            chunks[-1] = (last_offset, last + data)
        else:
            chunks.append((offset, data))

    def _flush_all(self) -> None:
        for push in list(self.pushes.values()):
            self._flush_push(push)

    def _flush_push(self, push: _Push) -> None:
        """Hand a push's queued data to its writers (before the answer too: the transport
        pipelines or holds it)."""
        if push.failed:
            push.pending.clear()
            return
        if not push.allocated and not self.pipelined:
            return
        for shnum in list(push.pending):
            writer = push.writers.get(shnum)
            if writer is None:
                continue
            chunks = push.pending.pop(shnum)
            if not push.allocated:
                push.unconfirmed.setdefault(shnum, []).extend(chunks)
            for offset, data in chunks:
                if not push.outstanding:  # owing from now: its silence counts from here
                    push.last_progress = self.clock.seconds()
                push.outstanding += len(data)
                d = writer.write(offset, data)
                d.addCallbacks(self._acked, self._write_failed, callbackArgs=(push, len(data)),
                               errbackArgs=(push, len(data)))

    def _acked(self, _: Any, push: _Push, length: int) -> None:
        push.last_progress = self.clock.seconds()
        push.outstanding = max(0, push.outstanding - length)
        if push.backlog() <= WINDOW_BYTES:
            push.wake()

    def _write_failed(self, failure: Failure, push: _Push, length: int) -> None:
        if failure.check(ShareNotAllocated):
            # The allocation's answer deals with the share; these bytes are no longer
            # on their way (a server that holds the share already refuses them).
            self._acked(None, push, length)
            return
        self._push_failed(failure, push)

    async def _window(self) -> None:
        for push in list(self.pushes.values()):
            while not push.failed and push.backlog() > WINDOW_BYTES and self.aborted is None:
                d: Deferred = Deferred()
                push.waiters.append(d)
                await self._unless_stalled(d, [push], lambda p: p.backlog() > WINDOW_BYTES,
                                           "share data")
        if self.aborted:
            raise UploadUnhappinessError(self.aborted, *self._counts())

    async def _unless_stalled(self, waiting: Deferred, pushes: list[_Push],
                              owes: Callable[[_Push], bool], what: str) -> None:
        """Wait for ``waiting``; meanwhile, a push among ``pushes`` that still ``owes``
        something and made no progress for :data:`STRAGGLER_GRACE` seconds is failed if
        the upload can be happy without it (its server suspected), which ends the wait."""
        def owing() -> list[tuple[_Push, float]]:
            return [(p, p.last_progress) for p in pushes if not p.failed and owes(p)]

        def give_up(silent: list[_Push], now: float) -> bool:
            if not self._can_still_be_happy(without={p.name for p in silent}):
                return False
            for push in silent:
                why = f"no progress with {what} in {now - push.last_progress:.1f} s"
                push.server.suspect(why)
                self._push_failed(Failure(TimeoutError(why)), push)
            return True
        await unless_stalled(self.clock, waiting, owing, give_up)

    def _encode_segment(self, segnum: int) -> EncodedSegment:
        geometry = self.encoder.geometry
        data = self.source.read(geometry.segment_offset(segnum), geometry.segment_length(segnum))
        return self.encoder.encode_segment(data)

    def _encode_whole(self) -> None:
        """Encode a small file at once: each share then goes out whole, allocation and
        write together (``allocate_and_write``)."""
        geometry = self.encoder.geometry
        source = self.source
        self.trailer, self.whole = self.encoder.encode_all(
            source.read(geometry.segment_offset(segnum), geometry.segment_length(segnum))
            for segnum in range(geometry.num_segments))
        self.read_cap = self.trailer.read_cap
        self.all_sent = True
        self.progress("push", 1.0)

    async def _encode_and_send(self) -> None:
        """Encode every segment and queue its blocks; a small file goes out as one write per
        share (header, blocks and tail together), a large one segment by segment."""
        encoder = self.encoder
        header = encoder.header
        for shnum in range(self.params.total):
            self._send(shnum, 0, header)
        count = encoder.geometry.num_segments
        inline = self.source.size <= INLINE_LIMIT
        upcoming: Deferred | None = None
        for segnum in range(count):
            if inline:
                encoded = self._encode_segment(segnum)
            else:
                if upcoming is None:
                    upcoming = deferToThread(self._encode_segment, segnum)
                encoded = await upcoming
                upcoming = deferToThread(self._encode_segment, segnum + 1) \
                    if segnum + 1 < count else None
            for shnum, block in enumerate(encoded.blocks):
                self._send(shnum, encoded.share_offset, block)
            if not inline:
                self._flush_all()
            await self._window()
            self.progress("push", (segnum + 1) / count)
        trailer = encoder.finish()
        for shnum in range(self.params.total):
            self._send(shnum, trailer.tail_offset, trailer.tail(shnum))
        self._flush_all()
        self.trailer = trailer
        self.read_cap = trailer.read_cap

    def _close_push(self, push: _Push) -> None:
        """Close each of a push's writers, right after its last write."""
        if push.failed or push.closing:
            return
        push.closing = True
        push.last_progress = self.clock.seconds()
        for shnum, writer in push.writers.items():
            d = writer.close()
            d.addCallbacks(self._closed, self._push_failed, callbackArgs=(push, shnum),
                           errbackArgs=(push,))
            self._closes.append((push, d))

    async def _finish(self) -> None:
        # Every byte is queued: close what is allocated now, the rest as writers arrive.
        self.all_sent = True
        for push in list(self.pushes.values()):
            if push.allocated:
                self._close_push(push)
        await self._allocations_answered()
        while True:
            pending = [d for push, d in self._closes if not d.called and not push.failed]
            if not pending:
                break
            closing = [p for p in self.pushes.values() if p.closing]
            await self._unless_stalled(DeferredList(pending, consumeErrors=True), closing,
                                       lambda p: bool(p.writers.keys() - p.closed),
                                       "closing its shares")
        sharemap = self._sharemap()
        happiness = servers_of_happiness(sharemap)
        self._placed = (sharemap, happiness)
        if happiness < self.params.happy:
            placed, _, happy = self._counts()
            raise UploadUnhappinessError(
                f"shares were placed on {placed} servers with happiness {happiness}, but "
                f"happiness {happy} is required" + self._refusals()
                + "".join(f"; {p.name[:11]}: {p.failed}" for p in self.pushes.values()
                          if p.failed), placed, happiness, happy)

    async def _allocations_answered(self) -> None:
        """Wait until every server asked (replacements too) answered or failed."""
        if self._unanswered:
            waiter: Deferred = Deferred()
            self._answered_waiters.append(waiter)
            await waiter
            if self.aborted:
                raise UploadUnhappinessError(self.aborted, *self._counts())

    def _closed(self, _: Any, push: _Push, shnum: int) -> None:
        push.closed.add(shnum)
        push.last_progress = self.clock.seconds()

    # -- accounting

    def _sharemap(self) -> dict[int, set[str]]:
        sharemap: dict[int, set[str]] = {}
        for push in self.pushes.values():
            if push.failed:
                continue
            for shnum in push.closed | push.already:
                if 0 <= shnum < self.params.total:
                    sharemap.setdefault(shnum, set()).add(push.name)
        return sharemap

    async def busy_servers(self) -> list[str]:
        """The servers (nicknames, else ids) that refused shares they do not hold, the
        answer a server gives while another upload of the same file writes them. Left
        out: those that failed, those that hold every share they were asked for, and
        those whose version, asked again now, has no room for a share (full, not busy:
        waiting for them would only delay the error)."""
        refusing = []
        for name, shnums in sorted(self.refused.items()):
            push = self.pushes[name]
            if push.failed and push.failed != "upload failed":
                continue
            if shnums - push.already and push.server.is_connected:
                refusing.append(push.server)
        if not refusing:
            return []
        answers = await DeferredList([server.storage.get_version() for server in refusing],
                                     consumeErrors=True)
        names = []
        for server, (ok, version) in zip(refusing, answers):
            room = maximum_immutable_share_size(version) if ok else None
            if ok and (room is None or room >= self.encoder.share_length):
                names.append(server.nickname or server.server_id.decode("ascii")[:11])
        return names

    def _can_still_be_happy(self, without: Collection[str] = ()) -> bool:
        """Whether the servers not failed (and not ``without``), with the spares left, may
        still reach happiness."""
        possible: dict[int, set[str]] = {}
        for push in self.pushes.values():
            if push.failed or push.name in without:
                continue
            for shnum in push.shares | push.already:
                possible.setdefault(shnum, set()).add(push.name)
        spare_servers = len([s for s in self.spares if s.is_connected])
        return servers_of_happiness(possible) + spare_servers >= self.params.happy

    def _counts(self) -> tuple[int, int, int]:
        sharemap = self._sharemap()
        servers = {server for holders in sharemap.values() for server in holders}
        return len(servers), servers_of_happiness(sharemap), self.params.happy

    def _abort_all(self, why: str) -> None:
        for push in self.pushes.values():
            for shnum, writer in push.writers.items():
                if shnum not in push.closed:
                    quietly(writer.abort())
            push.failed = push.failed or why
            push.wake()

    def _result(self) -> tuple[CHKReadCap | None, dict[int, frozenset[str]], int]:
        assert self._placed is not None, "_finish comes first"
        sharemap, happiness = self._placed
        assert self.read_cap is not None or self.trailer is not None
        return (self.read_cap, {n: frozenset(s) for n, s in sorted(sharemap.items())},
                happiness)
