"""Checking a file or directory: where its shares are, and renewing our leases on them.

``POST $CAP?t=check`` (``reference/frontends.md`` §3.6, ``tahoe check``):

* immutable (CHK files and immutable directories): ``get_buckets`` to every
  connected server at once, and with ``add-lease`` an ``add_lease`` to each at
  the same time (``storage-protocol.md`` §2.4);
* mutable (SSK/MDMF files and directories): a servermap update over every
  connected server (:func:`.mapupdate.survey`), with ``add_lease`` alongside;
* literal caps: healthy, nothing asked.

Read, write and verify caps all work. The share contents are not read
(that is ``verify=true``, not supported yet). Results are shaped by
:mod:`.check_results`.
"""
from __future__ import annotations

from typing import Any

from twisted.internet.defer import DeferredList
from twisted.python import log

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..util import base32
from .broker import StorageBroker, StorageServerHandle
from .check_results import immutable_results, lit_results, mutable_results
from .mapupdate import add_lease, survey
from .placement import permuted_ring

__all__ = ["Checker", "UncheckableCap"]


class UncheckableCap(ValueError):
    """The cap names nothing that has shares (an unknown cap)."""


class Checker:
    """Checks files and directories through one broker, renewing leases when asked."""

    def __init__(self, broker: StorageBroker, lease_secrets: ClientLeaseSecrets) -> None:
        self.broker = broker
        self.lease_secrets = lease_secrets

    def _servers(self, storage_index: bytes) -> list[StorageServerHandle]:
        servers = {s.server_id.decode("ascii"): s for s in self.broker.connected_servers()}
        order = permuted_ring(storage_index, {sid: s.permutation_seed
                                              for sid, s in servers.items()})
        return [servers[sid] for sid in order]

    async def check(self, cap: Any, add_lease: bool = False) -> dict[str, Any]:
        """The check results (Tahoe's JSON shape) of the object ``cap`` names.

        :raises UncheckableCap: for a cap of an unknown kind.
        """
        inner = cap.file_cap if isinstance(cap, DirectoryCap) else cap
        if isinstance(inner, LiteralCap):
            return lit_results()
        if isinstance(inner, (CHKReadCap, CHKVerifyCap)):
            return await self._check_immutable(inner, add_lease)
        fingerprint = getattr(inner, "fingerprint", None)
        storage_index = getattr(inner, "storage_index", None)
        if fingerprint is None or storage_index is None:
            raise UncheckableCap(f"cannot check a cap of this kind: {type(inner).__name__}")
        return await self._check_mutable(storage_index, fingerprint, add_lease)

    def _secrets(self, storage_index: bytes) -> Any:
        return lambda server: self.lease_secrets.for_server(storage_index, server.lease_seed)

    async def _check_immutable(self, cap: CHKReadCap | CHKVerifyCap,
                               renew: bool) -> dict[str, Any]:
        si = cap.storage_index
        servers = self._servers(si)
        if renew:
            secrets = self._secrets(si)
            for server in servers:
                add_lease(server, si, secrets(server))
        answers = await DeferredList([s.rref.callRemote("get_buckets", si) for s in servers],
                                     consumeErrors=True)
        sharemap: dict[int, set[str]] = {}
        responding = []
        for server, (ok, result) in zip(servers, answers):
            sid = server.server_id.decode("ascii")
            if not ok:
                log.msg(f"get_buckets from {server.nickname!r} failed: "
                        f"{result.getErrorMessage()}")
                continue
            responding.append(sid)
            for shnum in result:
                sharemap.setdefault(shnum, set()).add(sid)
        return immutable_results(base32.b2a(si), cap.needed, cap.total, sharemap, responding)

    async def _check_mutable(self, si: bytes, fingerprint: bytes,
                             renew: bool) -> dict[str, Any]:
        smap, probe = await survey(si, fingerprint, self._servers(si),
                                   self._secrets(si) if renew else None)
        return mutable_results(base32.b2a(si), smap.shares(), smap.bad_shares(), probe.answered)
