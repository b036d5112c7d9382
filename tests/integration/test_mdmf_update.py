"""In-place MDMF updates on the session's local grid (ten of our servers behind byte-counting
proxies): a small write sends little, reads back right, and racing writers lose nothing."""
from __future__ import annotations

import os
import threading
import time
import urllib.parse
from collections.abc import Iterator

import pytest

from tests.integration.conftest import DEFAULT_SHARES
from tests.support import webapi
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedGrid, start_static_client

EIGHT_MB = 8 * 1000 * 1000


def _url(node_url: str, path: str) -> str:
    return urllib.parse.urljoin(node_url, path)


def create_mdmf(node_url: str, data: bytes) -> str:
    """``PUT /uri?format=MDMF``: a new MDMF file; its write cap."""
    return webapi._request("PUT", _url(node_url, "/uri?format=MDMF"), data=data,
                           timeout=120).decode("ascii").strip()


def put_at(node_url: str, cap: str, offset: int, data: bytes) -> None:
    """``PUT /uri/$CAP?offset=N``."""
    webapi._request("PUT", _url(node_url, f"/uri/{urllib.parse.quote(cap, safe='')}"
                                f"?offset={offset}"), data=data, timeout=120)


def sent_to_servers(grid: ProxiedGrid) -> int:
    """Bytes the clients have sent to every storage server so far (through the proxies)."""
    return sum(c.c2s_forwarded for proxy in grid.proxies for c in proxy.connections())


@pytest.fixture(scope="module")
def big_file(local_grid: ProxiedGrid) -> tuple[str, bytes]:
    """An 8 MB MDMF file of random bytes (its cap and contents)."""
    data = os.urandom(EIGHT_MB)
    return create_mdmf(local_grid.client.url, data), data


def test_small_write_into_8mb_sends_little(local_grid: ProxiedGrid,
                                           big_file: tuple[str, bytes]) -> None:
    """A 100-byte write at offset 4,000,000 of an 8 MB MDMF file sends at most 3 MB to the
    servers (a whole publish sends about 27 MB), takes at most 3 times a 1 MB MDMF write
    (the best of three of each), and reads back right."""
    cap, data = big_file
    patches = [os.urandom(100) for _ in range(3)]
    updates, writes = [], []
    for patch in patches:
        local_grid.wait_idle(0.2)
        before = sent_to_servers(local_grid)
        started = time.monotonic()
        put_at(local_grid.client.url, cap, 4_000_000, patch)
        took = time.monotonic() - started
        local_grid.wait_idle(0.2)
        updates.append((took, sent_to_servers(local_grid) - before))
        before = sent_to_servers(local_grid)
        started = time.monotonic()
        create_mdmf(local_grid.client.url, os.urandom(1_000_000))
        took = time.monotonic() - started
        local_grid.wait_idle(0.2)
        writes.append((took, sent_to_servers(local_grid) - before))
    print(f"100-byte update of 8 MB MDMF (s, bytes sent): {updates}; "
          f"a 1 MB MDMF write: {writes}")
    assert max(sent for _, sent in updates) <= 3_000_000
    assert min(t for t, _ in updates) <= 3 * min(t for t, _ in writes)
    expected = data[:4_000_000] + patches[-1] + data[4_000_100:]
    assert webapi.download(local_grid.client.url, cap, timeout=120) == expected


def test_append_grows_the_file(local_grid: ProxiedGrid) -> None:
    """Appends that add segments (and grow the block hash trees) read back right, and send
    the changed segments times N/k (under 1.5 MB here), not the whole file (5.3 MB)."""
    data = os.urandom(1_600_000)
    cap = create_mdmf(local_grid.client.url, data)
    extra = os.urandom(100_000)
    local_grid.wait_idle(0.2)
    before = sent_to_servers(local_grid)
    put_at(local_grid.client.url, cap, len(data), extra)
    sent = sent_to_servers(local_grid) - before
    assert sent < 1_500_000
    tail = os.urandom(10)
    put_at(local_grid.client.url, cap, 10**9, tail)  # past the end: appended at the end
    assert webapi.download(local_grid.client.url, cap) == data + extra + tail


@pytest.fixture(scope="module")
def second_gateway(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[str]:
    """A second client gateway on the local grid's servers (stopped by PID); its URL."""
    workdir = tmp_path_factory.mktemp("update-gateway")
    with ProcessSet() as processes:
        yield start_static_client(TahoeTool(our_tahoe(), workdir / "logs"), workdir / "client",
                                  processes, local_grid.servers, shares=DEFAULT_SHARES).url


def test_racing_writers_lose_nothing(local_grid: ProxiedGrid, second_gateway: str) -> None:
    """Two gateways writing disjoint ranges of one MDMF file at once: every write that
    succeeded is in the final contents; one that failed says UncoordinatedWriteError."""
    size = 6 * 131073
    data = bytes(size)
    cap = create_mdmf(local_grid.client.url, data)
    writers = [local_grid.client.url, second_gateway]
    rounds = 5
    barrier = threading.Barrier(2, timeout=120)
    outcomes: list[tuple[int, bytes, str]] = []
    lock = threading.Lock()

    def writer(index: int) -> None:
        for r in range(rounds):
            offset = (2 * r + index) * 60_000 + 1000
            patch = bytes([1 + index + 2 * r]) * 500
            barrier.wait()  # both writers start each round together
            try:
                put_at(writers[index], cap, offset, patch)
                result = "ok"
            except webapi.WebError as error:
                assert "UncoordinatedWriteError" in error.body, error.body
                result = "conflict"
            with lock:
                outcomes.append((offset, patch, result))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert len(outcomes) == 2 * rounds
    final = webapi.download(local_grid.client.url, cap)
    assert len(final) == size
    for offset, patch, result in outcomes:
        if result == "ok":
            assert final[offset:offset + len(patch)] == patch, (offset, result)
    print("racing writers:", [result for _, _, result in outcomes])
    assert any(result == "ok" for _, _, result in outcomes)


def test_a_missing_share_means_a_whole_publish(local_grid: ProxiedGrid) -> None:
    """With one server unreachable, its share's new hash tree root cannot be computed in
    place: the update publishes a whole version instead (about the whole file times N/k
    sent, the missing share placed elsewhere), which reads back right."""
    size = 600_000
    data = os.urandom(size)
    cap = create_mdmf(local_grid.client.url, data)
    patch = os.urandom(100)
    dead = local_grid.proxies[0]
    dead.kill()
    try:
        local_grid.wait_idle(0.2)
        before = sent_to_servers(local_grid)
        put_at(local_grid.client.url, cap, 300_000, patch)
        sent = sent_to_servers(local_grid) - before
    finally:
        dead.revive()
    local_grid.client.wait_for_servers(len(local_grid.servers))
    assert sent > size * 10 / 3 * 0.8
    expected = data[:300_000] + patch + data[300_100:]
    assert webapi.download(local_grid.client.url, cap) == expected
