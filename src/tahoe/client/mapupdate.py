"""The servermap update of a mutable file: ask servers for share headers, check each one.

``slot_readv(SI, [], [(0, 4000)])`` (or more: whole shares, for a reader
that knows the file's share size) goes to the servers given, all at once
(one round trip); every share's header, key and signature are checked
against the file's fingerprint with :func:`tahoe.mutable.reader.check_header`
(a share whose key and signature lie past the probe is read again up to
their end), and the versions found go into a
:class:`~tahoe.mutable.servermap.ServerMap`. A corrupt share is marked bad
and reported to its server with ``advise_corrupt_share``; one rewritten by
another writer between those two reads is left out, not reported.

Used for reading and writing (:mod:`.mutable`) and for checking
(:mod:`.checker`), which may also renew leases: ``add_lease`` goes to each
server together with its ``slot_readv``, as Tahoe's check does.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from twisted.internet.defer import Deferred
from twisted.python import log

from ..crypto.lease_secrets import LeaseSecrets
from ..crypto.rsa import VerifyingKey
from ..mutable.errors import CorruptShare, LayoutInvalid, ShareTruncated
from ..mutable.layout import PROBE_SIZE
from ..mutable.reader import check_header
from ..mutable.servermap import ServerMap
from .broker import StorageServerHandle
from .stragglers import gather

__all__ = ["Probe", "report_corrupt", "survey", "add_lease"]

#: Remote errors from ``add_lease`` that old servers send for unknown buckets (ignored).
IGNORED_LEASE_ERRORS = ("KeyError", "IndexError", "NameError")


class Probe:
    """What one servermap update learnt beyond the map: share bytes, servers, the key.

    :ivar size: the bytes asked of each share (a share read shorter is whole).
    """

    def __init__(self, size: int = PROBE_SIZE) -> None:
        self.size = size
        self.data: dict[tuple[str, int], bytes] = {}
        self.servers: dict[str, StorageServerHandle] = {}
        self.verifying_key: VerifyingKey | None = None
        self.answered: list[str] = []


def report_corrupt(server: StorageServerHandle, kind: bytes, storage_index: bytes, shnum: int,
                   reason: str) -> Deferred:
    """Log a corrupt share and tell its server (``advise_corrupt_share``), ignoring failures.

    :returns: a Deferred that fires (with None, never failing) once the server answered:
        ours has then moved an immutable share aside that it found corrupt too.
    """
    log.msg(f"{kind.decode()} share {shnum} on {server.nickname!r} is corrupt: {reason}")
    d: Deferred = server.storage.advise_corrupt_share(kind, storage_index, shnum,
                                                      reason.encode("utf-8"))
    d.addErrback(lambda f: None)
    return d


def add_lease(server: StorageServerHandle, storage_index: bytes, secrets: LeaseSecrets) -> object:
    """Renew (or add) our lease on every share of ``storage_index`` on ``server``.

    :returns: a Deferred that fires with None; failures are logged, never raised.
    """
    d = server.storage.add_lease(storage_index, secrets.renew, secrets.cancel)

    def failed(failure: object) -> None:
        text = str(getattr(failure, "value", failure))
        if not any(name in text for name in IGNORED_LEASE_ERRORS):
            log.msg(f"add_lease on {server.nickname!r} failed: {text}")
    d.addErrback(failed)
    return d


async def survey(storage_index: bytes, fingerprint: bytes,
                 servers: Sequence[StorageServerHandle],
                 lease_secrets: Callable[[StorageServerHandle], LeaseSecrets] | None = None,
                 probe_size: int = PROBE_SIZE) -> tuple[ServerMap, Probe]:
    """Ask ``servers`` (all at once) for every share's first ``probe_size`` bytes.

    :param lease_secrets: when given, ``add_lease`` with these secrets goes to
        each server at the same time.
    :param probe_size: at least :data:`PROBE_SIZE`; more (a reader that knows the
        file's share size) gets whole shares in this one round trip.
    """
    probe = Probe(max(probe_size, PROBE_SIZE))
    smap = ServerMap()
    if lease_secrets is not None:
        for server in servers:
            add_lease(server, storage_index, lease_secrets(server))
    answers = await gather(
        [(s, s.storage.slot_readv(storage_index, [], [(0, probe.size)])) for s in servers],
        "a slot read")
    for server, (ok, result) in zip(servers, answers):
        sid = server.server_id.decode("ascii")
        if not ok:
            log.msg(f"slot_readv from {server.nickname!r} failed: {result.getErrorMessage()}")
            continue
        probe.servers[sid] = server
        probe.answered.append(sid)
        for shnum, reads in sorted(result.items()):
            data = reads[0] if reads else b""
            await _check_share(storage_index, fingerprint, smap, probe, server, sid, shnum, data)
    return smap, probe


async def _check_share(storage_index: bytes, fingerprint: bytes, smap: ServerMap, probe: Probe,
                       server: StorageServerHandle, sid: str, shnum: int, data: bytes) -> None:
    asked = probe.size
    for _ in range(4):
        try:
            checked = check_header(shnum, data, fingerprint, probe.verifying_key)
        except ShareTruncated as short:
            if len(data) < asked:
                break  # the share really is that short
            # Longer than read so far: read up to the end of its key and signature. A
            # share rewritten in between may need more again (a new version's header).
            asked = short.needed
            try:
                more = await server.storage.slot_readv(storage_index, [shnum], [(0, asked)])
            except Exception as error:
                log.msg(f"slot_readv of share {shnum} from {server.nickname!r} failed: "
                        f"{error!r}")
                return
            if not more.get(shnum):
                return  # the share went away meanwhile
            data = more[shnum][0]
            continue
        except (CorruptShare, LayoutInvalid) as error:
            report_corrupt(server, b"mutable", storage_index, shnum, str(error))
            smap.mark_bad(sid, shnum, data[:75])
            return
        probe.verifying_key = checked.verifying_key
        probe.data[(sid, shnum)] = data
        smap.add_share(sid, shnum, checked.version)
        return
    else:
        log.msg(f"share {shnum} on {server.nickname!r} changed at every read; left out")
        return
    report_corrupt(server, b"mutable", storage_index, shnum, "share is truncated")
    smap.mark_bad(sid, shnum, data[:75])
