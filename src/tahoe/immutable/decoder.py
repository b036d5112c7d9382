"""Synchronous verifying decoder over shares whose bytes can be read directly.

Given any k of a file's shares (as bytes, or anything with
``read(offset, length)``), checks every block, chain and tree against the
cap, leaves out shares that fail, rebuilds and decrypts. A corrupt share is
named in :attr:`ShareDecoder.corrupt`; wrong bytes are never returned.
(``reference/immutable.md`` §12.)
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from ..caps.immutable import CHKReadCap, CHKVerifyCap
from .errors import (BadBlock, BadCrypttext, CorruptShare, ImmutableFormatError, LayoutInvalid,
                     NotEnoughShares)
from .hashtree import build_tree
from .layout import MAX_HEADER_SIZE, ShareLayout, layout_for, parse_chain, parse_hashes, parse_header
from ..util.hashutil import uri_extension_hash
from .ueb import consistency_problems, parse_fields
from .verifier import FileVerifier

#: Refuse to read a UEB claimed to be longer than this (real ones are ~330 bytes).
MAX_UEB_READ = 64 * 1024


class ShareSource(Protocol):
    """Anything a share's bytes can be read from."""

    def read(self, offset: int, length: int) -> bytes:
        """Return up to ``length`` bytes at ``offset`` (short at the end)."""


class BytesShare:
    """A share held in memory."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, offset: int, length: int) -> bytes:
        """Return up to ``length`` bytes at ``offset``."""
        return self._data[offset:offset + length]


def _exact_read(source: ShareSource, shnum: int, offset: int, length: int, what: str) -> bytes:
    data = source.read(offset, length)
    if len(data) != length:
        raise CorruptShare(shnum, f"share is truncated in its {what}")
    return data


class ShareDecoder:
    """Rebuild (a range of) one file from shares, verifying everything.

    :param cap: the file's read cap.
    :param shares: share number to share bytes or a :class:`ShareSource`.
    """

    def __init__(self, cap: CHKReadCap, shares: Mapping[int, bytes | ShareSource]) -> None:
        self.cap = cap
        self.verifier = FileVerifier(cap)
        #: Share number to the reason it was found corrupt.
        self.corrupt: dict[int, str] = {}
        self._sources: dict[int, ShareSource] = {
            shnum: BytesShare(src) if isinstance(src, (bytes, bytearray, memoryview)) else src
            for shnum, src in shares.items()
        }
        self._layouts: dict[int, ShareLayout] = {}
        self._trees_loaded: set[int] = set()
        self._opened = False

    def _fail(self, error: CorruptShare) -> None:
        self.corrupt.setdefault(error.shnum, error.reason)
        self._layouts.pop(error.shnum, None)

    def _open(self) -> None:
        if self._opened:
            return
        self._opened = True
        for shnum in sorted(self._sources):
            source = self._sources[shnum]
            try:
                if not 0 <= shnum < self.cap.total:
                    raise CorruptShare(shnum, "share number is outside 0..N-1")
                try:
                    layout = parse_header(source.read(0, MAX_HEADER_SIZE))
                except LayoutInvalid as error:
                    raise CorruptShare(shnum, str(error)) from None
                self._layouts[shnum] = layout
                if not self.verifier.has_ueb:
                    self.verifier.accept_ueb(shnum, self._read_ueb(shnum, layout))
            except CorruptShare as error:
                self._fail(error)
        if not self.verifier.has_ueb:
            raise NotEnoughShares(self.cap.needed, 0, self.corrupt)
        for shnum, layout in sorted(self._layouts.items()):
            try:
                chain = _exact_read(self._sources[shnum], shnum, layout.share_hashes,
                                    layout.uri_extension - layout.share_hashes, "share hash chain")
                self.verifier.accept_share_chain(shnum, chain)
            except CorruptShare as error:
                self._fail(error)
        self._load_crypttext_tree()

    def _read_ueb(self, shnum: int, layout: ShareLayout) -> bytes:
        source = self._sources[shnum]
        field = _exact_read(source, shnum, layout.uri_extension, layout.ueb_length_size,
                            "UEB length")
        length = layout.parse_ueb_length(field)
        if length > MAX_UEB_READ:
            raise CorruptShare(shnum, f"UEB length {length} is absurd")
        return _exact_read(source, shnum, layout.uri_extension + layout.ueb_length_size, length,
                           "UEB")

    def _load_crypttext_tree(self) -> None:
        for shnum, layout in sorted(self._layouts.items()):
            try:
                data = _exact_read(self._sources[shnum], shnum, layout.crypttext_hash_tree,
                                   layout.block_hashes - layout.crypttext_hash_tree,
                                   "crypttext hash tree")
                self.verifier.add_crypttext_hashes(enumerate(parse_hashes(data)), shnum)
                return
            except (CorruptShare, LayoutInvalid) as error:
                self._fail(error if isinstance(error, CorruptShare)
                           else CorruptShare(shnum, str(error)))

    def _load_block_tree(self, shnum: int) -> None:
        if shnum in self._trees_loaded:
            return
        layout = self._layouts[shnum]
        data = _exact_read(self._sources[shnum], shnum, layout.block_hashes,
                           layout.share_hashes - layout.block_hashes, "block hash tree")
        try:
            hashes = parse_hashes(data)
        except LayoutInvalid as error:
            raise CorruptShare(shnum, str(error)) from None
        self.verifier.add_block_hashes(shnum, enumerate(hashes))
        self._trees_loaded.add(shnum)

    def _read_block(self, shnum: int, segnum: int) -> bytes:
        geometry = self.verifier.geometry
        assert geometry is not None
        self._load_block_tree(shnum)
        layout = self._layouts[shnum]
        offset = layout.data + segnum * geometry.block_size
        block = self._sources[shnum].read(offset, geometry.block_length(segnum))
        self.verifier.check_block(shnum, segnum, block)
        return block

    def _segment(self, segnum: int) -> bytes:
        needed = self.cap.needed
        blocks: dict[int, bytes] = {}
        for shnum in sorted(self._layouts):
            if len(blocks) == needed:
                break
            if self.verifier.block_tree(shnum) is None:
                continue
            try:
                blocks[shnum] = self._read_block(shnum, segnum)
            except BadBlock as error:
                # A bad block rules the share out for this segment only (reference §12.5).
                self.corrupt.setdefault(shnum, error.reason)
            except CorruptShare as error:
                self._fail(error)
        if len(blocks) < needed:
            good = sum(1 for s in self._layouts if self.verifier.block_tree(s) is not None)
            raise NotEnoughShares(needed, min(good, len(blocks)), self.corrupt)
        crypttext = self.verifier.decode_segment(segnum, blocks)
        return self.verifier.decrypt_segment(segnum, crypttext)

    def read(self, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        """Yield the plaintext of ``offset .. offset+length`` (to the end if None).

        Only the segments that hold the range are fetched.

        :raises NotEnoughShares: if fewer than k good shares hold some segment.
        :raises BadCrypttext: if verified shares decode to inconsistent ciphertext.
        """
        size = self.cap.size
        if length is None:
            length = size - offset
        offset = max(0, offset)
        end = min(size, offset + max(0, length))
        if offset >= end:
            return
        self._open()
        geometry = self.verifier.geometry
        assert geometry is not None
        for segnum in geometry.segments_for_range(offset, end - offset):
            start = geometry.segment_offset(segnum)
            plain = self._segment(segnum)
            yield plain[max(0, offset - start): end - start]


def decode_bytes(cap: CHKReadCap, shares: Mapping[int, bytes | ShareSource]) -> bytes:
    """Rebuild a whole file from shares held in memory, verifying everything."""
    return b"".join(ShareDecoder(cap, shares).read())


def verify_share(cap: CHKReadCap | CHKVerifyCap, shnum: int, share: bytes) -> list[str]:
    """Check every byte of one share that a correct uploader determines.

    Goes beyond a download: the header fields readers ignore, every node of
    every tree (padding included), every block, the zero plaintext-tree area,
    the UEB's optional fields and the exact share length.

    :returns: the problems found; empty when the share is intact.
    """
    verifier = FileVerifier(cap)
    problems: list[str] = []
    try:
        layout = parse_header(share[:MAX_HEADER_SIZE])
        field = share[layout.uri_extension:layout.uri_extension + layout.ueb_length_size]
        ueb_length = layout.parse_ueb_length(field)
        ueb_start = layout.uri_extension + layout.ueb_length_size
        ueb_data = share[ueb_start:ueb_start + ueb_length]
        trusted = verifier.accept_ueb(shnum, ueb_data)
        geometry = verifier.geometry
        assert geometry is not None
        problems += [f"UEB {p}" for p in consistency_problems(trusted, geometry)]
        expected = layout_for(geometry, force_v2=layout.version == 2)
        if layout != expected:
            problems.append(f"header {layout} differs from the expected {expected}")
            return problems
        if len(share) != expected.share_length(ueb_length):
            problems.append(f"share is {len(share)} bytes, expected "
                            f"{expected.share_length(ueb_length)}")
        verifier.accept_share_chain(shnum, share[layout.share_hashes:layout.uri_extension])
        if len(parse_chain(share[layout.share_hashes:layout.uri_extension])) != \
                layout.num_chain_entries:
            problems.append("share hash chain has the wrong number of entries")
        if any(share[layout.plaintext_hash_tree:layout.crypttext_hash_tree]):
            problems.append("the unused plaintext-hash-tree area is not zero")
        crypttext_nodes = parse_hashes(share[layout.crypttext_hash_tree:layout.block_hashes])
        verifier.add_crypttext_hashes(enumerate(crypttext_nodes), shnum)
        block_nodes = parse_hashes(share[layout.block_hashes:layout.share_hashes])
        verifier.add_block_hashes(shnum, enumerate(block_nodes))
        leaves = []
        for segnum in range(geometry.num_segments):
            offset = layout.data + segnum * geometry.block_size
            block = share[offset:offset + geometry.block_length(segnum)]
            try:
                verifier.check_block(shnum, segnum, block)
            except CorruptShare as error:
                problems.append(error.reason)
            tree = verifier.block_tree(shnum)
            assert tree is not None
            leaves.append(tree.get_leaf(segnum))
        if build_tree(leaves) != block_nodes:  # type: ignore[arg-type]
            problems.append("block hash tree has nodes that do not follow from its leaves")
        first_leaf = len(crypttext_nodes) // 2
        if build_tree(crypttext_nodes[first_leaf:first_leaf + geometry.num_segments]) != \
                crypttext_nodes:
            problems.append("crypttext hash tree has nodes that do not follow from its leaves")
    except CorruptShare as error:
        problems.append(error.reason)
    except (ImmutableFormatError, BadCrypttext) as error:
        problems.append(str(error))
    return problems


def verify_share_without_cap(storage_index: bytes, shnum: int, share: bytes) -> list[str]:
    """Check one share against its own UEB, as a storage server (which has no cap) can.

    The UEB is trusted as written and every other byte is checked against it
    (:func:`verify_share` with the verify cap the UEB implies): a flipped bit in
    the blocks, trees or chain is found; only a UEB rewritten to agree with the
    rest would pass.

    :returns: the problems found; empty when the share agrees with itself.
    :raises ShareVersionUnknown: or :class:`LayoutInvalid`, when the header itself is not
        one of a share of a known version: such bytes may be a format this version does
        not know, and are not judged.
    """
    layout = parse_header(share[:MAX_HEADER_SIZE])
    try:
        start = layout.uri_extension + layout.ueb_length_size
        length = layout.parse_ueb_length(share[layout.uri_extension:start])
        ueb_data = share[start:start + min(length, MAX_UEB_READ)]
        fields = parse_fields(ueb_data)
        cap = CHKVerifyCap(storage_index, uri_extension_hash(ueb_data),
                           int(fields["needed_shares"]), int(fields["total_shares"]),
                           int(fields["size"]))
    except (ImmutableFormatError, KeyError, TypeError, ValueError) as error:
        return [f"the share's own UEB cannot be read: {error}"]
    return verify_share(cap, shnum, share)
