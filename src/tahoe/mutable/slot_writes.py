"""Test-and-set writes that publish a version, and judging the servers' answers.

``reference/mutable-dirnodes.md`` §6 (placement) and §7.1, §7.4-§7.5: every
(server, share number) the servermap found is rewritten in place, tested
against the checkstring seen there; homeless share numbers go to the
least-loaded servers in permuted order, tested with ``(0, 1, b"eq", b"")``
("must not exist yet"). Each write sends ``new_length=None`` and reads
back the first 57 (SDMF) or 41 (MDMF) bytes of every share on the server.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence

from attrs import frozen

from ..caps.mutable import MutableFormat
from .encoder import EncodedShare, EncodedVersion
from .errors import UncoordinatedWriteError
from .servermap import ServerMap
from .version import MDMF_CHECKSTRING, SDMF_CHECKSTRING

ServerId = Hashable
#: A Foolscap test vector: (offset, length, operator, specimen).
WireTest = tuple[int, int, bytes, bytes]
#: "The share must not exist yet".
NEW_SHARE_TEST: WireTest = (0, 1, b"eq", b"")


def checkstring_test(checkstring: bytes) -> WireTest:
    """"The share must still start with ``checkstring``" (the version seen there)."""
    return (0, len(checkstring), b"eq", checkstring)


def read_vector(file_format: MutableFormat) -> list[tuple[int, int]]:
    """What each write reads back from every share on the server: its checkstring."""
    size = SDMF_CHECKSTRING.size if file_format is MutableFormat.SDMF else MDMF_CHECKSTRING.size
    return [(0, size)]


@frozen
class SlotWrite:
    """One share's entry of ``tw_vectors`` in ``slot_testv_and_readv_and_writev``.

    :ivar new_length: always None, as Tahoe sends (shares are never truncated).
    """

    shnum: int
    test_vectors: tuple[WireTest, ...]
    write_vectors: tuple[tuple[int, bytes], ...]
    new_length: int | None = None

    def to_wire(self) -> tuple[list[WireTest], list[tuple[int, bytes]], int | None]:
        """The ``(testv, writev, new_length)`` tuple for the Foolscap call."""
        return list(self.test_vectors), list(self.write_vectors), self.new_length


def share_write(share: EncodedShare, old_checkstring: bytes | None) -> SlotWrite:
    """The write of one new share over what the servermap saw in its place.

    :param old_checkstring: the checkstring (or bad-share bytes) recorded for
        this (server, share number), or None for a new placement.
    """
    test = NEW_SHARE_TEST if old_checkstring is None else checkstring_test(old_checkstring)
    return SlotWrite(share.shnum, (test,), share.write_vectors)


def place_shares(permuted_servers: Sequence[ServerId], existing: Collection[tuple[ServerId, int]],
                 total: int, bad_servers: Collection[ServerId] = ()) -> set[tuple[ServerId, int]]:
    """Tahoe's publish goal (§6): existing shares stay, homeless ones are spread.

    Servers are ordered by (shares already held among ``existing``,
    position in the permuted list); homeless share numbers, in increasing
    order, go to them in that order, wrapping around.

    :param existing: (server, share number) of every share found (good or bad).
    :raises ValueError: when a share is homeless and no usable server is left.
    """
    goal = {(s, n) for s, n in existing if s not in bad_servers}
    housed = {n for _, n in goal}
    homeless = [n for n in range(total) if n not in housed]
    if not homeless:
        return goal
    load: dict[ServerId, int] = {}
    for server, _ in goal:
        load[server] = load.get(server, 0) + 1
    ranked = sorted((load.get(server, 0), index) for index, server in enumerate(permuted_servers)
                    if server not in bad_servers)
    if not ranked:
        raise ValueError("no server is left to hold the homeless shares")
    for position, shnum in enumerate(homeless):
        goal.add((permuted_servers[ranked[position % len(ranked)][1]], shnum))
    return goal


def plan_publish(encoded: EncodedVersion, servermap: ServerMap,
                 permuted_servers: Sequence[ServerId],
                 bad_servers: Collection[ServerId] = ()) -> dict[ServerId, list[SlotWrite]]:
    """Every write of a publish, grouped by server (Tahoe sends one call per share).

    New files use an empty :class:`ServerMap` (no read happens before creation).
    """
    existing = set(servermap.shares()) | set(servermap.bad_shares())
    goal = place_shares(permuted_servers, existing, len(encoded.shares), bad_servers)
    plan: dict[ServerId, list[SlotWrite]] = {}
    for server, shnum in sorted(goal, key=lambda item: (item[1], repr(item[0]))):
        if shnum >= len(encoded.shares):
            continue
        write = share_write(encoded.shares[shnum], servermap.checkstring_for(server, shnum))
        plan.setdefault(server, []).append(write)
    return plan


def surprise_shares(read_data: Mapping[int, Sequence[bytes]], written_here: Collection[int],
                    new_checkstring: bytes) -> set[int]:
    """Shares a server reported that we neither wrote there nor find in our version.

    :param read_data: the second element of the server's answer.
    :param written_here: every share number this publish writes to that server.
    """
    return {shnum for shnum, reads in read_data.items()
            if shnum not in written_here and (not reads or reads[0] != new_checkstring)}


def check_write_answer(wrote: bool, read_data: Mapping[int, Sequence[bytes]],
                       written_here: Collection[int], new_checkstring: bytes) -> None:
    """Judge one ``slot_testv_and_readv_and_writev`` answer as Tahoe does (§7.4 step 5).

    :raises UncoordinatedWriteError: when the test failed, or the server
        holds shares of another version we did not know of.
    """
    if not wrote:
        raise UncoordinatedWriteError("the server's test vector failed: another writer "
                                      "changed the file")
    surprises = surprise_shares(read_data, written_here, new_checkstring)
    if surprises:
        raise UncoordinatedWriteError(f"the server holds shares {sorted(surprises)} of a "
                                      "version we did not know about")
