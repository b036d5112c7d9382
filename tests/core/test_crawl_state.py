"""The crawler state core: validation, resume points, bucket totals, history pruning."""
from __future__ import annotations

import pytest

from tahoe.storage import crawl_state as cs
from tahoe.storage.paths import all_prefixes


def test_new_state_is_valid_and_starts_at_cycle_zero() -> None:
    state = cs.new_state(5.0)
    assert cs.is_valid_state(state)
    assert cs.next_cycle(state) == 0 and cs.resume_point(state) == (0, None)


@pytest.mark.parametrize("change", [
    {"version": 2}, {"current-cycle": "3"}, {"last-complete-prefix": 7},
    {"last-cycle-finished": True}, {"current-cycle-start-time": "now"},
])
def test_states_of_the_wrong_shape_are_refused(change: dict) -> None:
    assert not cs.is_valid_state({**cs.new_state(), **change})


def test_missing_keys_are_refused() -> None:
    state = cs.new_state()
    del state["last-complete-bucket"]
    assert not cs.is_valid_state(state)
    assert not cs.is_valid_state(cs.new_state(), extra=("cycle-to-date",))
    assert not cs.is_valid_state([1, 2])


def test_resume_after_the_last_complete_prefix() -> None:
    state = {**cs.new_state(), "current-cycle": 4, "last-complete-prefix": "ab",
             "last-complete-bucket": "acxyz"}
    assert cs.resume_point(state) == (all_prefixes().index("ab") + 1, "acxyz")
    cs.finish_cycle(state, 4)
    assert cs.next_cycle(state) == 5 and cs.resume_point(state) == (0, None)


def test_bucket_count_keeps_only_the_finished_cycle() -> None:
    state = cs.new_state()
    cs.count_prefix(state, 0, "aa", 2, "aa1")
    cs.count_prefix(state, 1, "aa", 1, "aa1")
    cs.count_prefix(state, 1, "ab", 0, None)
    assert cs.bucket_count_done(state, 1) == 1
    assert state["bucket-counts"] == {"1": {"aa": 1, "ab": 0}}
    assert state["storage-index-samples"] == {"aa": [1, ["aa1"]]}


def test_space_recovered_has_every_tahoe_key() -> None:
    recovered = cs.empty_cycle()["space-recovered"]
    assert len(recovered) == 4 * 4 * 3
    assert recovered["actual-diskbytes-mutable"] == 0 and recovered["examined-buckets"] == 0


def test_history_entry_lists_lease_ages_in_order() -> None:
    cycle = cs.empty_cycle()
    for age in (3 * cs.DAY + 5, 10, 20, 3 * cs.DAY):
        cs.add_lease_age(cycle, age)
    entry = cs.history_entry(cycle, 1.0, 2.0, False, ["age", None, None, ["mutable"]])
    assert entry["lease-age-histogram"] == [[0, cs.DAY, 2], [3 * cs.DAY, 4 * cs.DAY, 2]]
    assert entry["cycle-start-finish-times"] == [1.0, 2.0]


def test_json_safe_converts_pickled_shapes() -> None:
    assert cs.json_safe({(0, 86400): 2, 3: {b"x"}, "l": (b"si", 1)}) == {
        "0,86400": 2, "3": ["x"], "l": ["si", 1]}
