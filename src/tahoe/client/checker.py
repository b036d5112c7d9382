"""Checking a file or directory: where its shares are, and renewing our leases on them.

``POST $CAP?t=check`` (``reference/frontends.md`` §3.6, ``tahoe check``):

* immutable (CHK files and immutable directories): ``get_buckets`` to every
  connected server at once, and with ``add-lease`` an ``add_lease`` to each at
  the same time (``storage-protocol.md`` §2.4);
* mutable (SSK/MDMF files and directories): a servermap update over every
  connected server (:func:`.mapupdate.survey`), with ``add_lease`` alongside;
* literal caps: healthy, nothing asked.

Read, write and verify caps all work. With ``verify``, every share found is
read whole and checked byte by byte against the cap by the cores'
share verifiers (:func:`tahoe.immutable.decoder.verify_share`,
:func:`tahoe.mutable.reader.verify_share`) in a worker thread, one share at a
time per file; a share that fails is listed as corrupt, reported to its
server (``advise_corrupt_share``) and not counted as good. Results are
shaped by :mod:`.check_results`.
"""
from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.threads import deferToThread
from twisted.python import log

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..immutable.decoder import verify_share
from ..mutable.errors import CorruptShare
from ..mutable.reader import verify_share as verify_mutable_share
from ..util import base32
from .broker import StorageBroker, StorageServerHandle
from .check_results import immutable_results, lit_results, mutable_results
from .mapupdate import add_lease, report_corrupt, survey
from .stragglers import gather

__all__ = ["Checker", "UncheckableCap"]

#: Bytes asked for per ``read`` while verifying an immutable share.
READ_SIZE = 1024 * 1024


class UncheckableCap(ValueError):
    """The cap names nothing that has shares (an unknown cap)."""


class Checker:
    """Checks files and directories through one broker, renewing leases when asked."""

    def __init__(self, broker: StorageBroker, lease_secrets: ClientLeaseSecrets) -> None:
        self.broker = broker
        self.lease_secrets = lease_secrets

    async def check(self, cap: Any, add_lease: bool = False,
                    verify: bool = False) -> dict[str, Any]:
        """The check results (Tahoe's JSON shape) of the object ``cap`` names.

        :raises UncheckableCap: for a cap of an unknown kind.
        """
        inner = cap.file_cap if isinstance(cap, DirectoryCap) else cap
        if isinstance(inner, LiteralCap):
            return lit_results()
        if isinstance(inner, (CHKReadCap, CHKVerifyCap)):
            return await self._check_immutable(inner, add_lease, verify)
        fingerprint = getattr(inner, "fingerprint", None)
        storage_index = getattr(inner, "storage_index", None)
        if fingerprint is None or storage_index is None:
            raise UncheckableCap(f"cannot check a cap of this kind: {type(inner).__name__}")
        return await self._check_mutable(storage_index, fingerprint, add_lease, verify,
                                         getattr(inner, "writekey", None))

    def _secrets(self, storage_index: bytes) -> Any:
        return lambda server: self.lease_secrets.for_server(storage_index, server.lease_seed)

    async def _check_immutable(self, cap: CHKReadCap | CHKVerifyCap,
                               renew: bool, verify: bool) -> dict[str, Any]:
        si = cap.storage_index
        servers = self.broker.ring(si)
        if renew:
            secrets = self._secrets(si)
            for server in servers:
                add_lease(server, si, secrets(server))
        answers = await gather([(s, s.storage.get_buckets(si)) for s in servers],
                               "a query for shares")
        sharemap: dict[int, set[str]] = {}
        corrupt: list[tuple[str, int]] = []
        advisories: list[Deferred] = []
        responding = []
        for server, (ok, result) in zip(servers, answers):
            sid = server.server_id.decode("ascii")
            if not ok:
                log.msg(f"get_buckets from {server.nickname!r} failed: "
                        f"{result.getErrorMessage()}")
                continue
            responding.append(sid)
            for shnum, reader in sorted(result.items()):
                if verify:
                    problems = await self._verify_immutable(cap, shnum, reader)
                    if problems:
                        advisories.append(report_corrupt(server, b"immutable", si, shnum,
                                                         "; ".join(problems)))
                        corrupt.append((sid, shnum))
                        continue
                sharemap.setdefault(shnum, set()).add(sid)
        # Once the servers have answered, ours have moved the corrupt shares aside, so a
        # repair that follows can put good copies in their place.
        await DeferredList(advisories)
        return immutable_results(base32.b2a(si), cap.needed, cap.total, sharemap, responding,
                                 corrupt)

    @staticmethod
    async def _verify_immutable(cap: CHKReadCap | CHKVerifyCap, shnum: int,
                                reader: Any) -> list[str]:
        """Read one share whole and check it; the problems found (empty: intact)."""
        pieces = []
        offset = 0
        try:
            while True:
                piece = await reader.read(offset, READ_SIZE)
                pieces.append(piece)
                offset += len(piece)
                if len(piece) < READ_SIZE:
                    break
        except Exception as error:  # noqa: BLE001 - a share we cannot read is not verified
            return [f"reading the share failed: {error}"]
        return await deferToThread(verify_share, cap, shnum, b"".join(pieces))

    async def _check_mutable(self, si: bytes, fingerprint: bytes, renew: bool, verify: bool,
                             writekey: bytes | None) -> dict[str, Any]:
        smap, probe = await survey(si, fingerprint, self.broker.ring(si),
                                   self._secrets(si) if renew else None)
        shares = smap.shares()
        corrupt = list(smap.bad_shares())
        if verify:
            for (sid, shnum), version in sorted(shares.items(), key=lambda kv: kv[0]):
                problem = await self._verify_mutable(probe.servers[sid], si, fingerprint,
                                                     writekey, shnum, version.offsets[-1])
                if problem is not None:
                    report_corrupt(probe.servers[sid], b"mutable", si, shnum, problem)
                    corrupt.append((sid, shnum))
                    del shares[(sid, shnum)]
        return mutable_results(base32.b2a(si), shares, corrupt, probe.answered)

    @staticmethod
    async def _verify_mutable(server: StorageServerHandle, si: bytes, fingerprint: bytes,
                              writekey: bytes | None, shnum: int, eof: int) -> str | None:
        """Read one mutable share up to its EOF offset and check it (its encrypted private
        key too, given the write key); the problem, or None."""
        try:
            answer = await server.storage.slot_readv(si, [shnum], [(0, eof)])
            data = (answer.get(shnum) or [b""])[0]
            await deferToThread(verify_mutable_share, shnum, data, fingerprint, writekey)
        except CorruptShare as error:
            return str(error)
        except Exception as error:  # noqa: BLE001 - a share we cannot read is not verified
            return f"reading the share failed: {error}"
        return None
