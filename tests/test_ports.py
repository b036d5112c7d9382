"""The test suite's port allocator: two pytest-xdist workers never pick the same port."""
from __future__ import annotations

from tests.support.ports import PortAllocator, _worker_slice


def _env(worker: int, count: int) -> dict[str, str]:
    return {"PYTEST_XDIST_WORKER": f"gw{worker}", "PYTEST_XDIST_WORKER_COUNT": str(count)}


def test_workers_take_ports_from_disjoint_slices() -> None:
    for count in (2, 3, 8):
        slices = [_worker_slice(10000, 32767, _env(i, count)) for i in range(count)]
        assert slices[0][0] == 10000 and slices[-1][1] <= 32767
        for (low, high), (next_low, _) in zip(slices, slices[1:]):
            assert low < high < next_low
    assert _worker_slice(10000, 32767, {}) == (10000, 32767)  # not under xdist
    assert _worker_slice(10000, 32767, {"PYTEST_XDIST_WORKER": "master"}) == (10000, 32767)


def test_allocator_stays_in_its_slice(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    allocator = PortAllocator(seed=1)
    low, high = allocator._low, allocator._high
    ports = [allocator.free_port() for _ in range(50)]
    assert len(set(ports)) == 50 and all(low <= p <= high for p in ports)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    other = PortAllocator(seed=1)
    assert other._high < low
