"""Which server holds which share of which version, and which version is best.

``reference/mutable-dirnodes.md`` §5 and §7.2. Pure bookkeeping: the
network shell queries servers, checks each share with
:func:`tahoe.mutable.reader.check_header` and records what it found here.
Servers are any hashable identifiers the shell chooses.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Sequence

from .version import VersionInfo

ServerId = Hashable


def recoverable_versions(observations: Iterable[tuple[VersionInfo, int]]) -> set[VersionInfo]:
    """Versions with shares of at least k distinct share numbers (each below N).

    :param observations: (version, share number) pairs, repeats allowed.
    """
    numbers: dict[VersionInfo, set[int]] = {}
    for version, shnum in observations:
        if 0 <= shnum < version.total:
            numbers.setdefault(version, set()).add(shnum)
    return {v for v, shnums in numbers.items() if len(shnums) >= v.needed}


def best_version(observations: Iterable[tuple[VersionInfo, int]]) -> VersionInfo | None:
    """The greatest recoverable version: highest seqnum, then highest root hash, ... (§5).

    :returns: None when no version is recoverable.
    """
    recoverable = recoverable_versions(observations)
    return max(recoverable, key=VersionInfo.sort_key) if recoverable else None


class ServerMap:
    """What a servermap update has learnt about one mutable file's shares."""

    def __init__(self) -> None:
        self._shares: dict[tuple[ServerId, int], VersionInfo] = {}
        self._bad: dict[tuple[ServerId, int], bytes] = {}
        self._seen: set[VersionInfo] = set()

    def add_share(self, server: ServerId, shnum: int, version: VersionInfo) -> None:
        """Record a share whose header checked out (replacing what was known of it)."""
        self._shares[(server, shnum)] = version
        self._bad.pop((server, shnum), None)
        self._seen.add(version)

    def mark_bad(self, server: ServerId, shnum: int, checkstring: bytes) -> None:
        """Record a corrupt share; it will be overwritten, tested against ``checkstring``.

        :param checkstring: the bytes the share is expected to start with (§7.5:
            its first 75 bytes when the servermap found it bad, the version's
            signed prefix when retrieve did).
        """
        self._shares.pop((server, shnum), None)
        self._bad[(server, shnum)] = checkstring

    def shares(self) -> dict[tuple[ServerId, int], VersionInfo]:
        """(server, share number) -> version, for every good share found."""
        return dict(self._shares)

    def bad_shares(self) -> dict[tuple[ServerId, int], bytes]:
        """(server, share number) -> recorded checkstring, for every share marked bad."""
        return dict(self._bad)

    def servers_with_shares(self) -> set[ServerId]:
        """Servers holding at least one good or bad share of this file."""
        return {server for server, _ in (*self._shares, *self._bad)}

    def versions(self) -> set[VersionInfo]:
        """Every version some good share belongs to."""
        return set(self._shares.values())

    def shares_of(self, version: VersionInfo) -> dict[int, set[ServerId]]:
        """Share number -> servers holding it, for one version."""
        found: dict[int, set[ServerId]] = {}
        for (server, shnum), held in self._shares.items():
            if held == version:
                found.setdefault(shnum, set()).add(server)
        return found

    def recoverable_versions(self) -> set[VersionInfo]:
        """Versions with k distinct share numbers."""
        return recoverable_versions((v, n) for (_, n), v in self._shares.items())

    def unrecoverable_versions(self) -> set[VersionInfo]:
        """Versions seen with fewer than k distinct share numbers."""
        return self.versions() - self.recoverable_versions()

    def best_recoverable_version(self) -> VersionInfo | None:
        """The version a reader should read (§5), or None."""
        return best_version((v, n) for (_, n), v in self._shares.items())

    def highest_seqnum(self) -> int:
        """The highest seqnum among all versions ever seen (0 when none)."""
        return max((v.seqnum for v in self._seen), default=0)

    def next_seqnum(self) -> int:
        """The seqnum of the next publish: highest seen + 1 (1 for a new file)."""
        return self.highest_seqnum() + 1

    def newer_unrecoverable_seen(self) -> bool:
        """True when a version newer than the best recoverable one is not yet recoverable.

        A read-mode update keeps asking servers while this holds (or while
        nothing is recoverable).
        """
        best = self.best_recoverable_version()
        if best is None:
            return True
        return any(v.seqnum > best.seqnum for v in self.unrecoverable_versions())

    def checkstring_for(self, server: ServerId, shnum: int) -> bytes | None:
        """What the share on ``server`` must still start with for an in-place rewrite.

        :returns: the held version's checkstring, the recorded bytes of a bad
            share, or None when no share was seen there.
        """
        version = self._shares.get((server, shnum))
        if version is not None:
            return version.checkstring
        return self._bad.get((server, shnum))


class ServerState(enum.Enum):
    """What one server answered during a write-mode servermap update."""

    PENDING = "?"
    FAILED = "x"
    EMPTY = "0"
    HAS_SHARES = "1"


def write_mode_complete(states: Sequence[ServerState], needed: int) -> bool:
    """Tahoe's stop rule for a write-mode update (§7.2), given states in permuted order.

    Done once, after the last server holding shares, ``needed`` (k)
    consecutive servers answered without shares, and every server before
    that point has answered. (The caller must also have a recoverable
    version and the private key.)
    """
    last_found = -1
    empty_run = 0
    pending_before = False
    for state in states:
        if state is ServerState.PENDING:
            pending_before = True
        elif state is ServerState.HAS_SHARES:
            last_found = 1
            empty_run = 0
        elif state is ServerState.EMPTY and last_found != -1:
            empty_run += 1
            if empty_run >= needed:
                return not pending_before
    return False
