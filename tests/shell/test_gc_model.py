"""Garbage collection deletes exactly what Tahoe's rules expire, on generated populations.

Hypothesis draws a small population (immutable and mutable buckets, each made at
some day and given further leases, new or renewed, on later days) and a policy
(age, age with an override, cutoff date; either kind of share exempt). The real
:class:`StorageServer` writes it; the real lease checker runs one cycle with
collection on, from a fresh index (its collection in threads or not) or
rebuilding the index from the files. A model
written from the rules in ``reference/storage-protocol.md`` §5.4-5.5, and
nothing of ours, says which shares must be left and with how many leases.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from tahoe.storage import paths
from tahoe.storage.containers import open_container
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.disk import open_file
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import ExpiryPolicy
from tests.shell.storage_support import assert_index_in_step, make_server, shares_on_disk

DAY = 86400
MONTH = 31 * DAY  # the lease duration (§5.4)
START = 1_780_000_000
NOW = START + 120 * DAY
CANCEL = b"c" * 32
WRITE_ENABLER = b"w" * 32

#: Days in steps of ten, so that drawn grants, overrides and cutoffs often meet exactly.
TEN_DAYS = st.integers(0, 15).map(lambda tens: tens * 10)
# one bucket: (mutable?, share numbers, [(day, renew secret number)]: the first makes it)
BUCKETS = st.lists(
    st.tuples(st.booleans(), st.sets(st.integers(0, 3), min_size=1, max_size=3),
              st.lists(st.tuples(TEN_DAYS.filter(lambda day: day < 120), st.integers(0, 2)),
                       min_size=1, max_size=4)),
    min_size=1, max_size=8)
POLICIES = st.one_of(
    st.builds(lambda: ("age", None, None)),
    st.builds(lambda days: ("age", days * DAY, None), TEN_DAYS.filter(bool)),
    st.builds(lambda days: ("cutoff-date", None, START + days * DAY), TEN_DAYS),
).flatmap(lambda rule: st.tuples(st.just(rule), st.booleans(), st.booleans()))


#: Collector threads, for the examples that collect several shares at once.
COLLECTORS = ThreadPoolExecutor(4, thread_name_prefix="test-collect")


def _model_expired(expiration: int, rule: tuple) -> bool:
    mode, override, cutoff = rule
    granted = expiration - MONTH
    if mode == "cutoff-date":
        return granted < cutoff
    if override is not None:
        return NOW - granted > override
    return NOW > expiration


def _model(buckets: list, rule: tuple, immutable: bool, mutable: bool) -> dict:
    """(storage index, share number) -> leases left, for every share that must remain."""
    left = {}
    for number, (is_mutable, shnums, grants) in enumerate(buckets):
        leases: list[list[int]] = []  # [secret, expiration], in the order added
        for day, secret in sorted(grants):
            expiration = START + day * DAY + MONTH
            same = [lease for lease in leases if lease[0] == secret]
            if same:
                same[0][1] = max(same[0][1], expiration)
            else:
                leases.append([secret, expiration])
        expires = mutable if is_mutable else immutable
        live = [lease for lease in leases if not (expires and _model_expired(lease[1], rule))]
        if live:
            for shnum in shnums:
                left[(_si(number), shnum)] = len(live)
    return left


def _si(number: int) -> bytes:
    return bytes([number * 97 % 256, number]) + b"model-bucket"[:14] + bytes([number, 7])


def _secret(number: int) -> bytes:
    return bytes([65 + number]) * 32


def _write(root: Path, buckets: list) -> None:
    clock = Clock()
    clock.advance(START)
    server = make_server(root, clock)
    events = []
    for number, (is_mutable, shnums, grants) in enumerate(buckets):
        ordered = sorted(grants)
        events.append((ordered[0][0], 0, number, ordered[0][1]))
        events.extend((day, 1, number, secret) for day, secret in ordered[1:])
    for day, later, number, secret in sorted(events):
        clock.advance(START + day * DAY - clock.seconds())
        is_mutable, shnums = buckets[number][:2]
        si, renew = _si(number), _secret(secret)
        if later:
            server.add_lease(si, renew, CANCEL)
        elif is_mutable:
            ok, _ = server.slot_testv_and_readv_and_writev(
                si, (WRITE_ENABLER, renew, CANCEL),
                {shnum: ([], [(0, b"mutable data")], None) for shnum in shnums}, [])
            assert ok
        else:
            _, writers = server.allocate_buckets(si, renew, CANCEL, set(shnums), 4)
            for writer in writers.values():
                writer.write(0, b"data")
                writer.close()
    server.close()


def _leases_left(root: Path, key: tuple[bytes, int]) -> int:
    with open_file(str(root / paths.share_path(*key))) as file:
        container = open_container(file)
        if isinstance(container, ImmutableContainer):
            return len(container.leases())
        return sum(1 for lease in container.lease_records() if not lease.is_empty_slot)


@given(buckets=BUCKETS, policy=POLICIES, rebuilding=st.booleans(), threaded=st.booleans())
@settings(max_examples=60, deadline=None)
def test_collection_follows_tahoes_rules(buckets: list, policy: tuple, rebuilding: bool,
                                         threaded: bool) -> None:
    (mode, override, cutoff), immutable, mutable = policy
    with TemporaryDirectory() as tmp:
        root = Path(tmp) / "storage"
        _write(root, buckets)
        if rebuilding:
            (root / "share-index.sqlite").unlink()
        clock = Clock()
        clock.advance(NOW)
        server = make_server(root, clock)
        assert server.index.fresh != rebuilding
        checker = LeaseCheckingCrawler(
            root, clock, server.index,
            ExpiryPolicy(mode, override_lease_duration=override, cutoff_date=cutoff,
                         immutable=immutable, mutable=mutable),
            True, slow_start=0, collectors=COLLECTORS if threaded else None)
        checker.start()
        clock.advance(checker.first_delay())
        try:
            expected = _model(buckets, (mode, override, cutoff), immutable, mutable)
            assert set(shares_on_disk(root)) == set(expected)
            assert {key: _leases_left(root, key) for key in expected} == expected
            assert_index_in_step(server)
        finally:
            server.close()
