"""What ``tahoe debug dump-share`` and ``catalog-shares`` say about one share file.

The text is Tahoe-LAFS 1.20's (``scripts/debug.py``), built from our pure
cores: the storage containers (``reference/storage-protocol.md`` §4.4, §4.5),
the immutable share layout and UEB (``reference/immutable.md`` §7), and the
SDMF and MDMF layouts (``reference/mutable-dirnodes.md`` §4). Only the parts
of a share that are shown are read, so a share of any size is cheap.

Better than Tahoe: a share without leases is catalogued (expiring in 0 s)
instead of failing with a traceback, and an MDMF share gets a catalog line
as an SDMF one does. Standard library (and our pure cores) only.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..caps.immutable import CHKVerifyCap
from ..caps.mutable import MDMFVerifyCap, SSKVerifyCap
from ..immutable.layout import MAX_HEADER_SIZE, ShareLayout, parse_header
from ..immutable.ueb import parse_fields
from ..mutable import sdmf
from ..mutable.hashes import parse_chain, parse_hashes
from ..mutable.keys import fingerprint_from_public_key
from ..mutable.layout import MAX_HEADER_SIZE as MUTABLE_HEADER_SIZE
from ..mutable.layout import parse_header as parse_mutable_header
from ..storage.containers import IDENTIFY_SIZE, ShareKind, identify
from ..storage.errors import UnknownContainer
from ..storage.disk import DiskFile
from ..storage.immutable_container import DATA_OFFSET as IMMUTABLE_DATA_OFFSET
from ..storage.immutable_container import ImmutableContainer
from ..storage.leases import Lease
from ..storage.mutable_container import DATA_OFFSET, HEADER_SIZE, MutableContainer
from ..util import base32
from ..util.hashutil import uri_extension_hash
from .aliases import quote_output

__all__ = ["dump_share", "describe_share", "expiration_text", "open_share"]

_KEYS_SIZES = ("size", "num_segments", "segment_size", "needed_shares", "total_shares")
_KEYS_CODEC = ("codec_name", "codec_params", "tail_codec_params")
_KEYS_HASHES = ("plaintext_hash", "plaintext_root_hash", "crypttext_hash",
                "crypttext_root_hash", "share_root_hash", "UEB_hash")
_SECTIONS = (("data", "block data"), ("plaintext_hash_tree", "plaintext_hash_tree"),
             ("crypttext_hash_tree", "crypttext_hash_tree"), ("block_hashes", "block_hashes"),
             ("share_hashes", "share_hashes"), ("uri_extension", "uri_extension"))
Container = ImmutableContainer | MutableContainer


@contextmanager
def open_share(path: str) -> Iterator[tuple[ShareKind, Container]]:
    """The kind and container of the share file at ``path``, open for reading.

    :raises OSError: if it cannot be read.
    :raises StorageError: (``UnknownContainer``, ``CorruptContainer``) if it is no share.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        file = DiskFile(fd)
        kind = identify(file.read_at(0, IDENTIFY_SIZE))
        container: Container = (MutableContainer.open(file) if kind is ShareKind.MUTABLE
                                else ImmutableContainer.open(file))
        yield kind, container
    finally:
        os.close(fd)


def expiration_text(expiration: float, now: float) -> str:
    """``2678399s (30 days)``: the seconds until ``expiration``, as Tahoe shows them."""
    remains = expiration - now
    text = "%ds" % remains
    if remains > 24 * 3600:
        text += " (%d days)" % (remains // (24 * 3600))
    elif remains > 3600:
        text += " (%d hours)" % (remains // 3600)
    return text


def _row(name: str, value: object) -> str:
    return f"{name:>20}: {value}"


def _storage_index_of(path: str) -> bytes | None:
    """The storage index named by the share's directory (the share does not hold it)."""
    parts = path.split(os.sep)
    if len(parts) < 2 or not base32.is_canonical(parts[-2]):
        return None
    storage_index = base32.a2b(parts[-2])
    return storage_index if len(storage_index) == 16 else None


def _ueb(container: ImmutableContainer) -> tuple[ShareLayout, bytes]:
    layout = parse_header(container.read_share_data(0, MAX_HEADER_SIZE))
    size_field = container.read_share_data(layout.uri_extension, layout.ueb_length_size)
    length = layout.parse_ueb_length(size_field)
    return layout, container.read_share_data(layout.uri_extension + layout.ueb_length_size, length)


def _readable_ueb(data: bytes) -> dict[str, Any]:
    """The UEB's fields with every hash in base32 and its own hash as ``UEB_hash``."""
    fields: dict[str, Any] = dict(parse_fields(data))
    fields["UEB_hash"] = uri_extension_hash(data)
    return {key: base32.b2a(value) if "hash" in key and isinstance(value, bytes)
            else value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            for key, value in fields.items()}


def _immutable_lines(container: ImmutableContainer, path: str, offsets: bool) -> list[str]:
    layout, ueb = _ueb(container)
    fields = _readable_ueb(ueb)
    lines = [_row("version", layout.version)]
    for group in (_KEYS_SIZES, _KEYS_CODEC, _KEYS_HASHES):
        if group is not _KEYS_SIZES:
            lines.append("")
        lines += [_row("file_size" if key == "size" else key, fields[key])
                  for key in group if key in fields]
    leftover = sorted(set(fields) - set(_KEYS_SIZES + _KEYS_CODEC + _KEYS_HASHES))
    if leftover:
        lines += ["", "LEFTOVER:", *(_row(key, fields[key]) for key in leftover)]
    storage_index = _storage_index_of(path)
    if storage_index is not None:
        cap = CHKVerifyCap(storage_index, base32.a2b(fields["UEB_hash"]),
                           fields["needed_shares"], fields["total_shares"], fields["size"])
        lines.append(_row("verify-cap", quote_output(cap.to_string(), quotemarks=False)))
    sizes = {"data": layout.plaintext_hash_tree - layout.data,
             "validation": layout.uri_extension - layout.plaintext_hash_tree,
             "uri-extension": len(ueb)}
    lines += ["", " Size of data within the share:",
              *(_row(key, sizes[key]) for key in sorted(sizes))]
    if offsets:
        lines += ["", " Section Offsets:", _row("share data", IMMUTABLE_DATA_OFFSET)]
        for attribute, name in _SECTIONS:
            offset = IMMUTABLE_DATA_OFFSET + getattr(layout, attribute)
            lines.append(f"  {name:>20}: {offset}   (0x{offset:x})")
        lines.append(_row("leases", IMMUTABLE_DATA_OFFSET + container.data_length))
    return lines


def _lease_lines(kind: ShareKind, container: Container, now: float) -> list[str]:
    if kind is ShareKind.IMMUTABLE:
        leases = container.leases()
        if not leases:
            return ["", " No leases."]
        return ["", *(f" Lease #{i}: owner={lease.owner_num}, expire in"
                      f" {expiration_text(lease.expiration, now)}"
                      for i, lease in enumerate(leases))]
    assert isinstance(container, MutableContainer)
    marker = "hash:" if container.hashed else ""
    lines: list[str] = []
    for i, lease in enumerate(container.lease_records()):
        if lease.is_empty_slot:
            continue
        lines += ["", f" Lease #{i}:", f"  ownerid: {lease.owner_num}",
                  f"  expires in {expiration_text(lease.expiration, now)}",
                  f"  renew_secret: {marker}{base32.b2a(lease.renew_field)}",
                  f"  cancel_secret: {marker}{base32.b2a(lease.cancel_field)}",
                  f"  secrets are for nodeid: {base32.b2a(lease.nodeid)}"]
    return lines or ["No leases."]


def _mutable_format(container: MutableContainer) -> str:
    first = container.read_share_data(0, 1)
    return {b"\x00": "SDMF", b"\x01": "MDMF"}.get(first, "unknown")


def _region(container: MutableContainer, span: tuple[int, int]) -> bytes:
    start, length = span
    return container.read_share_data(start, length)


def _mutable_contents(container: MutableContainer, share_format: str, path: str,
                      offsets: bool) -> list[str]:
    header = parse_mutable_header(container.read_share_data(0, MUTABLE_HEADER_SIZE))
    key = _region(container, header.verification_key_range())
    chain = parse_chain(_region(container, header.share_hash_chain_range()))
    nodes = parse_hashes(_region(container, header.block_hash_tree_range()))
    lines = [f" {share_format} contents:", f"  seqnum: {header.seqnum}",
             f"  root_hash: {base32.b2a(header.root_hash)}"]
    if isinstance(header, sdmf.SDMFHeader):
        lines.append(f"  IV: {base32.b2a(header.iv)}")
    # Tahoe sorts SDMF chain node numbers as text, MDMF ones as numbers.
    order: Callable[[int], Any] = str if share_format == "SDMF" else int
    lines += [f"  required_shares: {header.needed}", f"  total_shares: {header.total}",
              f"  segsize: {header.segment_size}", f"  datalen: {header.data_length}",
              f"  enc_privkey: {header.enc_privkey_range()[1]} bytes",
              f"  pubkey: {len(key)} bytes",
              f"  signature: {header.signature_range()[1]} bytes",
              f"  share_hash_chain: {','.join(str(n) for n in sorted(chain, key=order))}",
              f"  block_hash_tree: {len(nodes)} nodes"]
    storage_index = _storage_index_of(path)
    if storage_index is not None:
        cls = SSKVerifyCap if share_format == "SDMF" else MDMFVerifyCap
        cap = cls(storage_index, fingerprint_from_public_key(key))
        lines.append(f"  verify-cap: {quote_output(cap.to_string(), quotemarks=False)}")
    if offsets:
        lines += ["", " Section Offsets:", *_mutable_offsets(container, header)]
    return lines


def _mutable_offsets(container: MutableContainer, header: Any) -> list[str]:
    if isinstance(header, sdmf.SDMFHeader):
        def row(name: str, value: int, shift: int = 0) -> str:
            return f"{' ' * shift}{name:>20}: {value}   (0x{value:x})"
        table = header.offsets
        names = (("signature", table.signature), ("share_hash_chain", table.share_hash_chain),
                 ("block_hash_tree", table.block_hash_tree), ("block data", table.share_data),
                 ("enc_privkey", table.enc_privkey), ("end of share data", table.eof))
        outer, inner = 0, 2
    else:
        def row(name: str, value: int, shift: int = 0) -> str:
            return f"{' ' * shift}{name[:20]}: {value}   (0x{value:x})"
        table = header.offsets
        names = (("enc_privkey", table.enc_privkey), ("share_hash_chain", table.share_hash_chain),
                 ("signature", table.signature), ("pubkey", table.verification_key),
                 ("end of pubkey", table.verification_key_end), ("block data", table.share_data),
                 ("block_hash_tree", table.block_hash_tree), ("end of share data", table.eof))
        outer, inner = 2, 4
    return [row("first lease", HEADER_SIZE, outer), row("share data", DATA_OFFSET, outer),
            row("seqnum", DATA_OFFSET + 1, inner), row("root_hash", DATA_OFFSET + 9, inner),
            *(row(name, DATA_OFFSET + value, inner) for name, value in names),
            row("extra leases", container.extra_lease_offset + 4, outer)]


def dump_share(path: str, now: float, offsets: bool = False, leases_only: bool = False) -> str:
    """The text of ``tahoe debug dump-share [--offsets] [--leases-only] PATH``.

    :param path: the share file, absolute (its directory names the storage index).
    :param now: the current time (seconds since the epoch), for lease expiry.
    :raises OSError: if the file cannot be read.
    :raises StorageError: if it is no share container.
    :raises ValueError: (an immutable or mutable format error) if its contents are malformed.
    """
    lines = [f"share filename: {quote_output(path)}"]
    with open_share(path) as (kind, container):
        if kind is ShareKind.IMMUTABLE:
            assert isinstance(container, ImmutableContainer)
            if not leases_only:
                lines += _immutable_lines(container, path, offsets)
            lines += _lease_lines(kind, container, now)
            lines.append("")
        else:
            assert isinstance(container, MutableContainer)
            share_format = _mutable_format(container)
            lines += ["", "Mutable slot found:", f" share_type: {share_format}",
                      f" write_enabler: {base32.b2a(container.write_enabler)}",
                      f" WE for nodeid: {base32.b2a(container.write_enabler_nodeid)}",
                      f" num_extra_leases: {container.num_records - 4}",
                      f" container_size: {container.extra_lease_offset - DATA_OFFSET}",
                      f" data_length: {container.data_length}",
                      *_lease_lines(kind, container, now), ""]
            if share_format != "unknown":
                lines += [*_mutable_contents(container, share_format, path, offsets), ""]
    return "\n".join(lines) + "\n"


def _soonest(leases: list[Lease], now: float) -> int:
    """Seconds until the first lease expires (0 without leases, or once expired)."""
    return int(max(0, min((lease.expiration for lease in leases), default=now) - now))


def describe_share(path: str, si_b32: str, now: float) -> str:
    """One ``catalog-shares`` line for the share file at ``path`` (without a newline):
    ``CHK SI k/N size UEB-hash expiry PATH``, ``SDMF|MDMF SI k/N size #seqnum:root expiry
    PATH``, or ``UNKNOWN …``.

    :raises OSError: if the file cannot be read.
    :raises StorageError: or :class:`ValueError` if it is damaged.
    """
    quoted = quote_output(path)
    with open(path, "rb") as f:
        first = f.read(IDENTIFY_SIZE)
    try:
        identify(first)
    except UnknownContainer:
        return f"UNKNOWN really-unknown {quoted}"
    with open_share(path) as (kind, container):
        expiry = _soonest(container.leases(), now)
        if kind is ShareKind.IMMUTABLE:
            assert isinstance(container, ImmutableContainer)
            _, ueb = _ueb(container)
            fields = _readable_ueb(ueb)
            return (f"CHK {si_b32} {fields['needed_shares']}/{fields['total_shares']}"
                    f" {fields['size']} {fields['UEB_hash']} {expiry} {quoted}")
        assert isinstance(container, MutableContainer)
        share_format = _mutable_format(container)
        if share_format == "unknown":
            return f"UNKNOWN mutable {quoted}"
        header = parse_mutable_header(container.read_share_data(0, MUTABLE_HEADER_SIZE))
        return (f"{share_format} {si_b32} {header.needed}/{header.total} {header.data_length}"
                f" #{header.seqnum}:{base32.b2a(header.root_hash)} {expiry} {quoted}")
