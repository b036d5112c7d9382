"""The gateway's first request that may create something (a POST or a PUT) tells the
client it is used: only then does the node begin generating RSA keys ahead for new
mutable files, so a node that only stores shares, or only serves reads, spends no CPU
on keys (about a third of a node's start when they were made at once).

A real listener on 127.0.0.1 (``start_web_server``, as the node starts it) and
Twisted's HTTP client.
"""
from __future__ import annotations

from pathlib import Path

import pytest_twisted
from twisted.web.client import Agent, readBody
from twisted.web.resource import Resource

from tahoe.web.server import start_web_server


class _Any(Resource):
    isLeaf = True

    def render(self, request: object) -> bytes:
        return b"ok"


@pytest_twisted.ensureDeferred
async def test_the_first_post_or_put_calls_the_hook_once(tmp_path: Path) -> None:
    from twisted.internet import reactor
    calls: list[str] = []
    port = await start_web_server(reactor, "tcp:0:interface=127.0.0.1", _Any(), tmp_path,
                                  first_write=lambda: calls.append("used"))
    try:
        url = (tmp_path / "node.url").read_text().strip()
        agent = Agent(reactor)
        for method, expected in ((b"GET", []), (b"GET", []), (b"POST", ["used"]),
                                 (b"PUT", ["used"]), (b"POST", ["used"])):
            response = await agent.request(method, (url + "uri").encode())
            assert await readBody(response) == b"ok"
            assert calls == expected, method
    finally:
        await port.stopListening()
