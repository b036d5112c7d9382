"""Verified, streaming download of immutable files from the grid.

1. ``get_buckets`` goes to the connected servers in ring order, all at once;
   the download starts as soon as k distinct shares have answered, taking
   the shares that answered first (the fastest servers).
2. Each chosen share is opened with one read when it is small (the whole
   share, its length predicted from the cap) or two (header, then every
   hash and the UEB in one read) when it is large; everything is checked
   by :class:`~tahoe.immutable.verifier.FileVerifier` before it is trusted.
3. Segments are fetched a few at a time ahead of the reader (one ``read``
   per block), checked block by block, decoded and decrypted (in a worker
   thread when large) and streamed out. Only the segments a range needs are
   fetched.
4. A share that fails a check is reported with ``advise_corrupt_share`` and
   replaced by another; a block that takes more than :data:`SLOW_READ`
   seconds is also asked of another share, and the slow one is used last; if fewer than k good shares remain the download
   fails with :class:`NotEnoughSharesError`.

Facts: ``reference/immutable.md`` §12, ``reference/storage-protocol.md`` §3.2, §8.9.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, DeferredQueue
from twisted.internet.threads import deferToThread
from twisted.python import log
from twisted.python.failure import Failure

from ..caps.immutable import CHKReadCap
from ..immutable.errors import BadBlock, CorruptShare, LayoutInvalid
from ..immutable.layout import MAX_HEADER_SIZE, ShareLayout, layout_for, parse_hashes, parse_header
from ..immutable.params import DEFAULT_MAX_SEGMENT_SIZE, SegmentGeometry
from ..immutable.ueb import serialized_length
from ..immutable.verifier import FileVerifier
from ..stats.registry import Statistics
from ..util.memory import after_large_transfer
from .broker import StorageBroker, StorageServerHandle
from .errors import NoSharesError, NotEnoughSharesError

#: A share predicted to be at most this long is read whole in its first read.
WHOLE_SHARE_LIMIT = 256 * 1024
#: Bytes read for a UEB whose length is not known yet (Tahoe's UEBs are ~330).
UEB_GUESS = 2048
#: Segments fetched ahead of the one being delivered.
SEGMENTS_AHEAD = 3
#: How long an open download of a large file is kept for further (ranged) reads.
CACHE_SECONDS = 120.0
#: How many open downloads are kept.
CACHE_ENTRIES = 16
#: Seconds a segment's blocks may take before another share is asked as well.
SLOW_READ = 2.0
#: Segments at least this large are decoded and decrypted in a worker thread.
THREAD_SEGMENT = 128 * 1024


class _Share:
    """One share on one server, with the bytes read so far from its start."""

    def __init__(self, shnum: int, reader: Any, server: StorageServerHandle) -> None:
        self.shnum = shnum
        self.reader = reader
        self.server = server
        self.layout: ShareLayout | None = None
        self.prefix = b""
        #: Whether ``prefix`` is the whole share (a read from 0 came back short).
        self.whole = False
        self.bad: str | None = None

    async def read(self, offset: int, length: int) -> bytes:
        """Bytes at ``offset`` (cut short at the end of the share)."""
        if offset + length <= len(self.prefix) or self.whole:
            return self.prefix[offset:offset + length]
        data: bytes = await self.reader.read(offset, length)
        if offset == 0 and len(data) > len(self.prefix):
            self.prefix = data
            self.whole = len(data) < length
        return data

    def report(self, reason: str) -> None:
        """Tell the server this share is corrupt (best effort)."""
        d = self.reader.advise_corrupt_share(reason.encode("utf-8"))
        d.addErrback(lambda f: None)


class FileDownload:
    """Reads (ranges of) one CHK file.

    :param cap: the file's read cap.
    :param broker: the connected storage servers.
    """

    def __init__(self, cap: CHKReadCap, broker: StorageBroker,
                 stats: Statistics | None = None) -> None:
        self.cap = cap
        self.broker = broker
        self._stats = stats
        self.verifier = FileVerifier(cap)
        self.si = cap.storage_index
        self.candidates: list[_Share] = []
        self.active: dict[int, _Share] = {}
        #: Why each dropped share was dropped, in order ("share N on 'server': reason").
        self.dropped: list[str] = []
        self._located: Deferred | None = None
        self._answers = 0
        self._asked = 0
        self._answer_waiters: list[Deferred] = []
        self._clock = broker.clock
        #: When it was last read (for :class:`Downloader`'s cache), and whether it failed.
        self.last_used = float(self._clock.seconds())
        self.failed = False
        #: Shares that were slow to answer; asked last from then on.
        self.slow: set[int] = set()

    # -- finding shares

    def _locate(self) -> Deferred:
        """Ask every connected server, in ring order; fire once k shares (or all answers) are in."""
        if self._located is not None:
            return self._located
        located: Deferred = Deferred()
        self._located = located
        order = self.broker.ring(self.si)
        self._asked = len(order)
        if not order:
            located.callback(None)
            return located

        def answered(buckets: Any, server: StorageServerHandle) -> None:
            self._answers += 1
            for shnum, reader in sorted(buckets.items()):
                self.candidates.append(_Share(shnum, reader, server))
            check()

        def failed(failure: Any, server: StorageServerHandle) -> None:
            self._answers += 1
            log.msg(f"get_buckets from {server.nickname!r} failed: {failure.getErrorMessage()}")
            check()

        def check() -> None:
            waiting, self._answer_waiters = self._answer_waiters, []
            for d in waiting:
                d.callback(None)
            if located.called:
                return
            distinct = {share.shnum for share in self.candidates}
            if len(distinct) >= self.cap.needed or self._answers >= self._asked:
                located.callback(None)

        for server in order:
            d = server.storage.get_buckets(self.si)
            d.addCallbacks(answered, failed, callbackArgs=(server,), errbackArgs=(server,))
        return located

    def _all_answered(self) -> bool:
        return self._answers >= self._asked

    # -- opening shares

    def _first_read_length(self) -> int:
        """The whole predicted share if small, else just the header."""
        cap = self.cap
        try:
            guess = SegmentGeometry.for_file(cap.size, cap.needed, cap.total,
                                             DEFAULT_MAX_SEGMENT_SIZE)
            length = layout_for(guess).share_length(serialized_length(guess))
        except Exception:
            return MAX_HEADER_SIZE
        return length + 64 if length <= WHOLE_SHARE_LIMIT else MAX_HEADER_SIZE

    async def _open_share(self, share: _Share) -> None:
        """Read and check a share's header, UEB, chain and hash trees."""
        head = await share.read(0, self._first_read_length())
        try:
            layout = parse_header(head)
        except LayoutInvalid as error:
            raise CorruptShare(share.shnum, str(error)) from None
        share.layout = layout
        verifier = self.verifier
        start = layout.crypttext_hash_tree
        end = layout.uri_extension + layout.ueb_length_size + UEB_GUESS
        meta = await share.read(start, end - start)
        ueb_at = layout.uri_extension - start
        if not verifier.has_ueb:
            field = meta[ueb_at:ueb_at + layout.ueb_length_size]
            ueb_length = layout.parse_ueb_length(field)
            if ueb_length > 65536:
                raise CorruptShare(share.shnum, f"UEB length {ueb_length} is absurd")
            ueb_start = ueb_at + layout.ueb_length_size
            ueb = meta[ueb_start:ueb_start + ueb_length]
            if len(ueb) < ueb_length:
                ueb = await share.read(start + ueb_start, ueb_length)
            verifier.accept_ueb(share.shnum, ueb)
        verifier.accept_share_chain(
            share.shnum, meta[layout.share_hashes - start:layout.uri_extension - start])
        try:
            crypttext_nodes = parse_hashes(meta[0:layout.block_hashes - start])
            block_nodes = parse_hashes(meta[layout.block_hashes - start:
                                            layout.share_hashes - start])
        except LayoutInvalid as error:
            raise CorruptShare(share.shnum, str(error)) from None
        verifier.add_crypttext_hashes(enumerate(crypttext_nodes), share.shnum)
        verifier.add_block_hashes(share.shnum, enumerate(block_nodes))

    async def _activate(self, count: int) -> None:
        """Open candidate shares until ``count`` distinct good ones are active."""
        while len(self.active) < count:
            # Primary shares (0..k-1) first: decoding from them is a concatenation.
            fresh = sorted((s for s in self.candidates
                            if s.shnum not in self.active and s.bad is None and s.layout is None),
                           key=lambda s: s.shnum >= self.cap.needed)
            if not fresh:
                if not self._all_answered():
                    d: Deferred = Deferred()
                    self._answer_waiters.append(d)
                    await d
                    continue
                break
            wanted = count - len(self.active)
            batch, seen = [], set(self.active)
            for share in fresh:
                if share.shnum not in seen and len(batch) < wanted:
                    batch.append(share)
                    seen.add(share.shnum)
            if not batch:
                break
            results = await DeferredList([Deferred.fromCoroutine(self._open_share(s))
                                          for s in batch], consumeErrors=True)
            for share, (ok, value) in zip(batch, results):
                if ok:
                    if share.shnum not in self.active:
                        self.active[share.shnum] = share
                else:
                    self._mark_bad(share, value)
        if len(self.active) < count:
            found = len({s.shnum for s in self.candidates if s.bad is None})
            distinct = len({s.shnum for s in self.candidates})
            cls = NoSharesError if distinct == 0 else NotEnoughSharesError
            raise cls(f"ran out of shares: found {found} good of {distinct} distinct shares "
                      f"on {self._asked} servers, needed {self.cap.needed}{self._why()}",
                      min(found, len(self.active)), self.cap.needed)

    def _mark_bad(self, share: _Share, failure: Any) -> None:
        error = failure.value if hasattr(failure, "value") else failure
        reason = error.reason if isinstance(error, CorruptShare) else \
            f"{type(error).__name__}: {error}"
        if self.active.get(share.shnum) is share:
            del self.active[share.shnum]
        if share.bad is not None:
            return  # dropped already: the reads of other segments in flight failed with it
        share.bad = reason
        if isinstance(error, CorruptShare):
            share.report(f"corruption in share {share.shnum}: {reason}")
        self.dropped.append(f"share {share.shnum} on {share.server.nickname!r}: {reason}")
        log.msg(f"download {self.si.hex()[:8]}: dropping share {share.shnum}: {reason}")

    def _why(self) -> str:
        """Every dropped share's reason, for an error's message: corrupt or not, each is news."""
        return "".join(f"; {line}" for line in self.dropped)

    async def _ensure_open(self) -> None:
        await self._locate()
        await self._activate(self.cap.needed)

    # -- segments

    async def _spare_share(self, asked: set[int]) -> _Share | None:
        """An active share not yet asked for this segment, opening one more if needed."""
        for shnum, share in sorted(self.active.items()):
            if shnum not in asked:
                return share
        try:
            await self._activate(len(self.active) + 1)
        except NotEnoughSharesError:
            return None
        for shnum, share in sorted(self.active.items()):
            if shnum not in asked:
                return share
        return None

    async def _fetch_blocks(self, segnum: int) -> dict[int, bytes]:
        """k checked blocks of one segment, asking another share when one fails or is slow."""
        geometry = self.verifier.geometry
        assert geometry is not None
        needed = self.cap.needed
        await self._activate(needed)
        blocks: dict[int, bytes] = {}
        asked: set[int] = set()
        answers: DeferredQueue = DeferredQueue()
        in_flight = 0

        def ask(share: _Share) -> None:
            nonlocal in_flight
            asked.add(share.shnum)
            in_flight += 1
            d = Deferred.fromCoroutine(_await(share.read(
                share.layout.data + segnum * geometry.block_size,  # type: ignore[union-attr]
                geometry.block_length(segnum))))
            d.addBoth(lambda result: answers.put((share, result)))

        preferred = sorted(self.active.values(), key=lambda s: (s.shnum in self.slow, s.shnum))
        for share in preferred[:needed]:
            ask(share)
        timer = self._clock.callLater(SLOW_READ, answers.put, (None, None))
        try:
            while len(blocks) < needed:
                share, result = await answers.get()
                if share is None:
                    # Some block is late: ask one more share, and prefer others from now on.
                    self.slow.update(n for n in asked if n not in blocks)
                    spare = await self._spare_share(asked)
                    if spare is not None:
                        ask(spare)
                else:
                    in_flight -= 1
                    if isinstance(result, Failure):
                        self._mark_bad(share, result)
                    else:
                        try:
                            self.verifier.check_block(share.shnum, segnum, result)
                        except BadBlock as error:
                            self._mark_bad(share, error)
                        else:
                            blocks[share.shnum] = result
                            continue
                    spare = await self._spare_share(asked)
                    if spare is not None:
                        ask(spare)
                if in_flight == 0 and len(blocks) < needed:
                    # Nothing left to wait for (a late timer may come after the last answer).
                    raise NotEnoughSharesError(
                        f"segment {segnum}: only {len(blocks)} good blocks, needed {needed}"
                        + self._why(),
                        len(blocks), needed)
        finally:
            if timer.active():
                timer.cancel()
        return {n: blocks[n] for n in sorted(blocks)[:needed]}

    def _decode(self, segnum: int, blocks: dict[int, bytes]) -> bytes:
        crypttext = self.verifier.decode_segment(segnum, blocks)
        return self.verifier.decrypt_segment(segnum, crypttext)

    async def read(self, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        """Yield the plaintext of ``offset .. offset+length`` in order (to the end if None).

        :raises NotEnoughSharesError: when fewer than k good shares can be found.
        """
        size = self.cap.size
        end = size if length is None else min(size, offset + max(0, length))
        offset = max(0, offset)
        # statistics (reference/frontends.md §5): every read call, with its bytes
        timer = None
        if self._stats is not None:
            self._stats.count("downloader.files_downloaded")
            self._stats.count("downloader.bytes_downloaded", max(0, end - offset))
            timer = self._stats.timer()
        self.last_used = float(self._clock.seconds())
        if offset >= end:
            return
        try:
            await self._ensure_open()
        except NotEnoughSharesError:
            self.failed = True
            raise
        geometry = self.verifier.geometry
        assert geometry is not None
        segments = list(geometry.segments_for_range(offset, end - offset))
        in_flight: deque[tuple[int, Deferred]] = deque()
        next_index = 0
        while in_flight or next_index < len(segments):
            while next_index < len(segments) and len(in_flight) <= SEGMENTS_AHEAD:
                segnum = segments[next_index]
                in_flight.append((segnum, Deferred.fromCoroutine(self._fetch_blocks(segnum))))
                next_index += 1
            segnum, pending = in_flight.popleft()
            try:
                blocks = await pending
            except NotEnoughSharesError:
                self.failed = True
                raise
            if geometry.segment_length(segnum) >= THREAD_SEGMENT:
                plain = await deferToThread(self._decode, segnum, blocks)
            else:
                plain = self._decode(segnum, blocks)
            start = geometry.segment_offset(segnum)
            yield plain[max(0, offset - start):end - start]
        if timer is not None:
            timer.done("downloader.latencies.read", "downloader.rates.read", end - offset)
        after_large_transfer(self._clock, end - offset)


async def _await(d: Any) -> Any:
    return await d


class Downloader:
    """Opens downloads of immutable files through the broker's servers.

    Downloads of large files are kept for a while (:data:`CACHE_SECONDS`, at
    most :data:`CACHE_ENTRIES`), so that a ranged read of a file read
    recently reuses its open, verified shares and costs one round trip.
    """

    def __init__(self, broker: StorageBroker, stats: Statistics | None = None) -> None:
        self._broker = broker
        self._stats = stats
        self._cache: OrderedDict[str, FileDownload] = OrderedDict()

    def open(self, cap: CHKReadCap) -> FileDownload:
        """A download of ``cap`` (nothing is fetched until it is read)."""
        key = cap.to_string()
        now = float(self._broker.clock.seconds())
        cached = self._cache.pop(key, None)
        if cached is not None and not cached.failed and now - cached.last_used < CACHE_SECONDS:
            self._cache[key] = cached
            return cached
        download = FileDownload(cap, self._broker, self._stats)
        if cap.size > WHOLE_SHARE_LIMIT * cap.needed:
            self._cache[key] = download
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return download
