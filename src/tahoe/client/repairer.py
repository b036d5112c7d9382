"""Check and repair (``t=check&repair=true``, ``reference/frontends.md`` §3.6).

A file found unhealthy but recoverable is repaired:

* immutable (with a read cap): the plaintext is downloaded (verified) into
  a temporary file and uploaded again with the cap's key, k, N and the
  original segment size, which gives the very same shares; servers that
  still hold a share answer ``alreadygot``, so only the missing ones move.
  A share a verify found corrupt is replaced too (Tahoe 1.20 leaves it): the
  check waited for the servers' answers to its corruption advisories, and
  ours move a share aside that fails a check against itself
  (``storage/quarantine.py``), so the upload writes a good copy; the
  post-repair results then come from a new check;
* mutable (with a write cap): the best version is read and published again
  as a new version, to every server of the ring.

Then it is checked again (an immutable file's post-repair results are, as
in Tahoe, the check's shares plus those the upload placed). The result has
Tahoe's shape:
``{"storage-index", "repair-attempted", "repair-successful",
"pre-repair-results", "post-repair-results"}``; a literal file gives its
plain check result. Without the cap a repair needs (a verify cap, a
read-only mutable cap) nothing is attempted.
"""
from __future__ import annotations

import tempfile
from typing import Any

from twisted.python import log

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.mutable import MDMFWriteCap, SSKWriteCap
from ..immutable.params import EncodingParameters
from .check_results import immutable_results, lit_results
from .uploadable import FileUploadable

__all__ = ["check_and_repair", "check_unit"]

#: Plaintext kept in memory while a file is spooled for repair; beyond, a temporary file.
SPOOL_MEMORY = 1024 * 1024


async def check_and_repair(services: Any, cap: Any, add_lease: bool = False,
                           verify: bool = False) -> dict[str, Any]:
    """Check ``cap``'s object, repair it if it needs it and can be, check again."""
    checker = services.checker
    pre = await checker.check(cap, add_lease=add_lease, verify=verify)
    if "summary" not in pre:  # a literal object: nothing to repair
        return pre
    inner = cap.file_cap if isinstance(cap, DirectoryCap) else cap
    attempted = successful = False
    post = pre
    details = pre["results"]
    if not details["healthy"] and details["recoverable"] and _repairable(inner):
        attempted = True
        try:
            if isinstance(inner, CHKReadCap):
                upload = await _repair_immutable(services, inner)
                if details["list-corrupt-shares"]:
                    # Corrupt shares were moved aside by their servers and replaced:
                    # what holds now is what a new check sees.
                    post = await checker.check(cap, verify=verify)
                else:
                    post = _immutable_post(pre, inner, upload)
            else:
                node = services.mutable.open(inner)
                await node.overwrite(await node.read())
                post = await checker.check(cap, verify=verify)
        except Exception as error:  # noqa: BLE001 - a failed repair is reported, not raised
            log.msg(f"repair of {pre['storage-index']} failed: {error!r}")
            post = await checker.check(cap, verify=verify)
        successful = bool(post["results"]["healthy"])
    return {"storage-index": pre["storage-index"], "repair-attempted": attempted,
            "repair-successful": successful, "pre-repair-results": pre,
            "post-repair-results": post}


async def check_unit(services: Any, unit: Any, *, add_lease: bool, verify: bool,
                     repair: bool) -> dict[str, Any]:
    """The check (or check-and-repair) results of one object of a deep walk
    (:class:`.deep.Unit`); literal and unknown objects get Tahoe's stand-ins."""
    if unit.child.is_unknown or unit.child.cap is None or not unit.line["storage-index"]:
        return {"storage-index": "", "repair-attempted": False} if repair else lit_results()
    if repair:
        return await check_and_repair(services, unit.child.cap, add_lease, verify)
    return await services.checker.check(unit.child.cap, add_lease=add_lease, verify=verify)


def _repairable(cap: Any) -> bool:
    return isinstance(cap, (CHKReadCap, SSKWriteCap, MDMFWriteCap))


def _immutable_post(pre: dict[str, Any], cap: CHKReadCap, upload: Any) -> dict[str, Any]:
    """The post-repair results of an immutable file as Tahoe gives them: the shares the
    check found plus those the repair placed (no second check), summary ``healthy`` or
    ``not healthy``."""
    details = pre["results"]
    sharemap = {int(shnum): set(servers) for shnum, servers in details["sharemap"].items()}
    responding = set(details["servers-responding"])
    for shnum, servers in upload.sharemap.items():
        sharemap.setdefault(shnum, set()).update(servers)
        responding.update(servers)
    corrupt = [(server, shnum) for server, _, shnum in details["list-corrupt-shares"]]
    post = immutable_results(pre["storage-index"], cap.needed, cap.total, sharemap, responding,
                             corrupt)
    post["summary"] = "healthy" if post["results"]["healthy"] else "not healthy"
    return post


async def _repair_immutable(services: Any, cap: CHKReadCap) -> Any:
    """Upload the file again with its own key and encoding; the upload's result."""
    download = services.downloader.open(cap)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY) as spool:
        async for chunk in download.read():
            spool.write(chunk)
        geometry = download.verifier.geometry
        assert geometry is not None
        params = EncodingParameters(cap.needed, min(services.params.happy, cap.total), cap.total,
                                    geometry.segment_size)
        spool.flush()
        result = await services.uploader.upload(FileUploadable(spool, cap.size), params,
                                                key=cap.key)
    if result.cap != cap and not isinstance(result.cap, LiteralCap):
        raise RuntimeError(f"re-encoding gave {result.cap.to_string()}, not the file's cap")
    return result
