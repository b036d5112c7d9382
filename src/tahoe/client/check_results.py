"""The results of a file check, in the JSON shape of Tahoe 1.20's ``t=check&output=JSON``.

``reference/frontends.md`` §3.6. Pure: the checker shell gathers which
server holds which share (and, for a mutable file, of which version) and
hands it here. Server ids are the long ``v0-…`` names.

* Immutable: healthy when all N share numbers were found; recoverable with k.
* Mutable: healthy when exactly one version is recoverable, none is seen
  unrecoverable, no share is corrupt, and the best version has all N shares;
  share ids in ``sharemap`` are ``seq<N>-<first 4 base32 chars of the root
  hash>-sh<n>``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..mutable.servermap import best_version, recoverable_versions
from ..mutable.version import VersionInfo
from ..util import base32
from .placement import servers_of_happiness

__all__ = ["immutable_results", "lit_results", "mutable_results", "version_label"]

Sharemap = Mapping[int, Iterable[str]]


def lit_results() -> dict[str, Any]:
    """A literal file has no shares and is always healthy."""
    return {"storage-index": "", "results": {"healthy": True}}


def _body(summary: str, healthy: bool, recoverable: bool, needed: int, total: int,
          good: Mapping[Any, Iterable[str]], counts: dict[str, int],
          responding: Iterable[str], corrupt: list[list[Any]]) -> dict[str, Any]:
    hosts = {server for servers in good.values() for server in servers}
    return {
        "summary": summary,
        "results": {
            **counts,
            "count-shares-needed": needed, "count-shares-expected": total,
            "count-good-share-hosts": len(hosts),
            "count-corrupt-shares": len(corrupt), "list-corrupt-shares": corrupt,
            "servers-responding": sorted(set(responding)),
            "healthy": healthy, "recoverable": recoverable,
        },
    }


def immutable_results(si_b32: str, needed: int, total: int, sharemap: Sharemap,
                      responding: Iterable[str],
                      corrupt: Iterable[tuple[str, int]] = ()) -> dict[str, Any]:
    """Check results of an immutable file from share number -> servers holding a good copy.

    :param corrupt: (server, share number) of shares that failed verification.
    """
    found = {shnum: sorted(set(servers)) for shnum, servers in sharemap.items() if servers}
    count = len(found)
    healthy = count >= total
    summary = "Healthy" if healthy else f"Not Healthy: {count} shares (enc {needed}-of-{total})"
    counts = {"count-happiness": servers_of_happiness(found), "count-shares-good": count,
              "count-wrong-shares": 0, "count-recoverable-versions": int(count >= needed),
              "count-unrecoverable-versions": int(count < needed)}
    body = _body(summary, healthy, count >= needed, needed, total, found, counts, responding,
                 [[server, si_b32, shnum] for server, shnum in sorted(corrupt)])
    body["results"]["sharemap"] = {str(shnum): found[shnum] for shnum in sorted(found)}
    return {"storage-index": si_b32, **body}


def version_label(version: VersionInfo) -> str:
    """``seq<N>-<root hash prefix>``, how Tahoe names a mutable version."""
    return f"seq{version.seqnum}-{base32.b2a(version.root_hash)[:4]}"


def mutable_results(si_b32: str, shares: Mapping[tuple[str, int], VersionInfo],
                    corrupt: Iterable[tuple[str, int]], responding: Iterable[str],
                    default_needed: int = 3, default_total: int = 10) -> dict[str, Any]:
    """Check results of a mutable file from (server, share number) -> version held."""
    observations = [(version, shnum) for (_, shnum), version in shares.items()]
    recoverable = recoverable_versions(observations)
    unrecoverable = {v for v, _ in observations} - recoverable
    best = best_version(observations)
    problems = []
    if unrecoverable:
        problems.append("some versions are unrecoverable")
    if not recoverable:
        problems.append("no versions are recoverable")
    if len(recoverable) > 1:
        problems.append("multiple versions are recoverable")
    reference = best or (max(unrecoverable, key=VersionInfo.sort_key) if unrecoverable else None)
    needed, total = ((reference.needed, reference.total) if reference
                     else (default_needed, default_total))
    good: dict[int, set[str]] = {}
    for (server, shnum), version in shares.items():
        if version == reference:
            good.setdefault(shnum, set()).add(server)
    if best is not None and len(good) < total:
        problems.append(f"{len(good)} shares (enc {needed}-of-{total})")
    corrupt_list = sorted(corrupt)
    if corrupt_list:
        problems.append("Corrupt Shares:")
        problems.extend(f"{server}-sh{shnum}" for server, shnum in corrupt_list)
    healthy = not problems
    counts = {"count-happiness": servers_of_happiness(good), "count-shares-good": len(good),
              "count-wrong-shares": sum(1 for v in shares.values() if v != reference),
              "count-recoverable-versions": len(recoverable),
              "count-unrecoverable-versions": len(unrecoverable)}
    summary = "Healthy" if healthy else "Unhealthy: " + " ".join(problems)
    body = _body(summary, healthy, bool(recoverable), needed, total, good, counts, responding,
                 [[server, si_b32, shnum] for server, shnum in corrupt_list])
    sharemap: dict[str, list[str]] = {}
    for (server, shnum), version in sorted(shares.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        sharemap.setdefault(f"{version_label(version)}-sh{shnum}", []).append(server)
    body["results"]["sharemap"] = sharemap
    return {"storage-index": si_b32, **body}
