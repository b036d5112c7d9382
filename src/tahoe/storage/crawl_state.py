"""The state the storage crawlers keep between slices and restarts, as JSON-ready dicts.

``storage-protocol.md`` §4.7 names the files; their contents use the keys
Tahoe-LAFS 1.20 writes, so a storage directory moves between Tahoe and us
with its crawl position and history:

* every crawler: ``version`` (1), ``last-cycle-finished``, ``current-cycle``,
  ``current-cycle-start-time``, ``last-complete-prefix`` and
  ``last-complete-bucket`` (where to resume);
* the bucket counter adds ``bucket-counts`` (cycle -> prefix -> buckets),
  ``storage-index-samples`` and ``last-complete-bucket-count``;
* the lease checker adds ``cycle-to-date`` (:func:`empty_cycle`), and keeps
  the last :data:`HISTORY_LENGTH` finished cycles in a history file
  (cycle number as text -> :func:`history_entry`).

Pure: the crawler shell passes in the time and does the disk work.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .paths import all_prefixes

__all__ = [
    "DAY", "HISTORY_LENGTH", "LEGACY_STATE_FILES", "Counts", "add_bucket", "add_lease_age",
    "add_share", "age_bin", "age_bin_key", "bucket_count_done",
    "count_prefix", "empty_cycle", "finish_cycle", "history_entry", "history_with",
    "is_valid_state", "json_safe", "merge_cycle", "new_state", "next_cycle", "resume_point",
]

STATE_VERSION = 1
#: Pre-1.17 pickle state files (relative to the storage directory); a node
#: refuses to start while one is there, as Tahoe 1.20 does.
LEGACY_STATE_FILES = ("bucket_counter.state", "lease_checker.state", "lease_checker.history")
HISTORY_LENGTH = 10
DAY = 24 * 60 * 60
#: Which space-recovered figures a share or bucket adds to.
FIGURES = ("actual", "original", "configured", "examined")
_BASE_KEYS = {"version", "last-cycle-finished", "current-cycle", "last-complete-prefix",
              "last-complete-bucket"}

Counts = dict[str, int]


def json_safe(value: Any) -> Any:
    """An unpickled old state as JSON-ready data.

    Tuples and sets become lists (sets sorted), dict keys text (a tuple key
    such as ``(0, 86400)`` becomes ``"0,86400"``), and byte strings ASCII text.
    """
    if isinstance(value, dict):
        return {_json_key(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return [json_safe(v) for v in sorted(value, key=repr)]
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("ascii", "replace")
    return value


def _json_key(key: Any) -> str:
    if isinstance(key, tuple):
        return ",".join(_json_key(k) for k in key)
    if isinstance(key, bytes):
        return key.decode("ascii", "replace")
    return str(key)


def new_state(now: float | None = None) -> dict[str, Any]:
    """A crawler that has never run: the next cycle is cycle 0."""
    return {"version": STATE_VERSION, "last-cycle-finished": None, "current-cycle": None,
            "current-cycle-start-time": now, "last-complete-prefix": None,
            "last-complete-bucket": None}


def _optional(value: Any, kind: type | tuple[type, ...]) -> bool:
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))


def is_valid_state(state: Any, extra: Iterable[str] = ()) -> bool:
    """Whether ``state`` (parsed JSON) is a crawler state this code can resume from."""
    if not isinstance(state, dict) or not _BASE_KEYS.issubset(state) or any(
            key not in state for key in extra):
        return False
    return (state["version"] == STATE_VERSION
            and _optional(state["last-cycle-finished"], int)
            and _optional(state["current-cycle"], int)
            and _optional(state["last-complete-prefix"], str)
            and _optional(state["last-complete-bucket"], str)
            and _optional(state.get("current-cycle-start-time"), (int, float)))


def next_cycle(state: Mapping[str, Any]) -> int:
    """The number of the cycle to start when none is in progress."""
    finished = state["last-cycle-finished"]
    return 0 if finished is None else finished + 1


def resume_point(state: Mapping[str, Any]) -> tuple[int, str | None]:
    """(index into :func:`all_prefixes` to work on, last bucket done in it or ``None``).

    A cycle in progress resumes after its last complete prefix; otherwise at 0.
    """
    if state["current-cycle"] is None:
        return 0, None
    prefixes = all_prefixes()
    last = state["last-complete-prefix"]
    index = prefixes.index(last) + 1 if last in prefixes else 0
    return index, state["last-complete-bucket"]


def finish_cycle(state: dict[str, Any], cycle: int) -> None:
    """Mark ``cycle`` finished; the next slice starts a new cycle from the first prefix."""
    state["last-cycle-finished"] = cycle
    state["current-cycle"] = None
    state["last-complete-prefix"] = None
    state["last-complete-bucket"] = None


# the bucket counter


def count_prefix(state: dict[str, Any], cycle: int, prefix: str, buckets: int,
                 sample: str | None) -> None:
    """Record how many buckets (storage indexes) ``prefix`` held during ``cycle``, and the
    name of one of them (``None`` if there were none)."""
    counts = state.setdefault("bucket-counts", {})
    counts.setdefault(str(cycle), {})[prefix] = buckets
    if sample is not None:
        state.setdefault("storage-index-samples", {})[prefix] = [cycle, [sample]]


def bucket_count_done(state: dict[str, Any], cycle: int) -> int:
    """At the end of ``cycle``: total the per-prefix counts, keep only this cycle's."""
    counts = state.setdefault("bucket-counts", {})
    total = sum(counts.get(str(cycle), {}).values())
    state["last-complete-bucket-count"] = total
    for old in [c for c in counts if c != str(cycle)]:
        del counts[old]
    samples = state.setdefault("storage-index-samples", {})
    for prefix in [p for p, (c, _) in samples.items() if c != cycle]:
        del samples[prefix]
    return total


# the lease checker


def _empty_recovered() -> Counts:
    return {f"{figure}-{what}{kind}": 0 for figure in FIGURES
            for what in ("buckets", "shares", "sharebytes", "diskbytes")
            for kind in ("", "-mutable", "-immutable")}


def empty_cycle() -> dict[str, Any]:
    """The ``cycle-to-date`` figures of a cycle that has examined nothing yet."""
    return {"corrupt-shares": [], "space-recovered": _empty_recovered(),
            "lease-age-histogram": {}, "leases-per-share-histogram": {}}


def _bump(counts: dict[str, int], key: str, amount: int = 1) -> None:
    counts[key] = counts.get(key, 0) + amount


def add_lease_age(cycle_data: dict[str, Any], age: float) -> None:
    """Count one lease in the histogram of lease ages (one-day bins, ``"min,max"`` keys).

    The bin number is the age in days truncated toward zero, as Tahoe does, so
    a lease granted up to a day in the future counts in ``[0, 1 day)``.
    """
    _bump(cycle_data["lease-age-histogram"], age_bin_key(age_bin(age)))


def age_bin(age: float) -> int:
    """The number of a lease age's one-day bin (:func:`add_lease_age`)."""
    return int(age / DAY)


def age_bin_key(number: int) -> str:
    """The lease-age histogram's key of bin ``number``: ``"min,max"`` in seconds."""
    return f"{number * DAY},{(number + 1) * DAY}"


def add_share(cycle_data: dict[str, Any], figures: Iterable[str], kind: str,
              sharebytes: int, diskbytes: int, count: int = 1) -> None:
    """Count shares (``count`` of them, of ``kind``, ``"mutable"`` or ``"immutable"``,
    holding ``sharebytes`` and ``diskbytes`` together) under each figure."""
    recovered = cycle_data["space-recovered"]
    for figure in figures:
        for suffix in ("", f"-{kind}"):
            _bump(recovered, f"{figure}-shares{suffix}", count)
            _bump(recovered, f"{figure}-sharebytes{suffix}", sharebytes)
            _bump(recovered, f"{figure}-diskbytes{suffix}", diskbytes)


def add_bucket(cycle_data: dict[str, Any], figures: Iterable[str], kind: str | None,
               diskbytes: int, count: int = 1) -> None:
    """Count buckets (``count`` storage indexes' directories, using ``diskbytes``
    together) under each figure.

    :param kind: their shares' kind; ``None`` (no shares) counts in the totals only.
    """
    recovered = cycle_data["space-recovered"]
    for figure in figures:
        for suffix in ("",) if kind is None else ("", f"-{kind}"):
            _bump(recovered, f"{figure}-buckets{suffix}", count)
            _bump(recovered, f"{figure}-diskbytes{suffix}", diskbytes)


def history_entry(cycle_data: Mapping[str, Any], started: float | None, finished: float,
                  enabled: bool, mode: list[Any]) -> dict[str, Any]:
    """What the history keeps of a finished cycle.

    :param mode: ``[mode, override seconds, cutoff date, [share kinds]]`` as configured.
    """
    ages = sorted((tuple(int(x) for x in key.split(",")), count)
                  for key, count in cycle_data["lease-age-histogram"].items())
    return {"cycle-start-finish-times": [started, finished], "expiration-enabled": enabled,
            "configured-expiration-mode": mode,
            "lease-age-histogram": [[low, high, count] for (low, high), count in ages],
            "leases-per-share-histogram": dict(cycle_data["leases-per-share-histogram"]),
            "corrupt-shares": [list(x) for x in cycle_data["corrupt-shares"]],
            "space-recovered": dict(cycle_data["space-recovered"])}


def history_with(history: Mapping[str, Any], cycle: int,
                 entry: dict[str, Any]) -> dict[str, Any]:
    """``history`` plus ``entry`` for ``cycle``, keeping the last :data:`HISTORY_LENGTH`."""
    updated = {**history, str(cycle): entry}
    for old in sorted(updated, key=int)[:-HISTORY_LENGTH]:
        del updated[old]
    return updated


def merge_cycle(into: dict[str, Any], part: Mapping[str, Any]) -> None:
    """Add the figures of ``part`` (an :func:`empty_cycle` filled by examining some
    buckets elsewhere, e.g. in a worker thread) to ``into``."""
    into["corrupt-shares"].extend(list(x) for x in part["corrupt-shares"])
    for key in ("space-recovered", "lease-age-histogram", "leases-per-share-histogram"):
        counts = into[key]
        for name, amount in part[key].items():
            _bump(counts, name, amount)
