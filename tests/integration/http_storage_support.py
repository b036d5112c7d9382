"""A storage node of ours reached at the byte level over HTTPS, for the HTTP storage API tests.

``http_node`` (module scope) runs one real storage node and gives its Tub
port and swissnum; :class:`HTTPStorage` writes requests to it with the right
(or deliberately wrong) credentials over :mod:`tests.support.rawhttp`.
"""
from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tahoe.storage import http_messages as m
from tahoe.util import base32
from tahoe.util.furl import parse_furl
from tests.support.grid import SMALL_GRID_SHARES
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.ournodes import create_storage_node, start_node, tub_port
from tests.support.processes import ProcessSet
from tests.support.rawhttp import ConnectionClosed, RawConnection, RawResponse, request_bytes

RENEW = b"r" * 32
CANCEL = b"c" * 32
UPLOAD = b"u" * 20
WRITE_ENABLER = b"w" * 32


@dataclass(frozen=True)
class NodeAddress:
    """Where a storage node takes the HTTPS storage protocol, its swissnum, and (for checks
    on disk) its node directory."""

    port: int
    swissnum: bytes
    basedir: Path | None = None


@pytest.fixture(scope="module")
def http_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeAddress]:
    """A fresh storage node of ours for the module."""
    workdir = tmp_path_factory.mktemp("http-node")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    with ProcessSet() as processes:
        basedir = create_storage_node(tool, workdir / "storage", shares=SMALL_GRID_SHARES)
        start_node(tool, basedir, processes)
        furl = (basedir / "private" / "storage.furl").read_text().strip()
        yield NodeAddress(tub_port(basedir), parse_furl(furl).swissnum.encode("ascii"), basedir)


def secrets(**values: bytes) -> list[tuple[str, str]]:
    """``X-Tahoe-Authorization`` headers, e.g. ``secrets(upload=b"…")``."""
    names = {"renew": "lease-renew-secret", "cancel": "lease-cancel-secret",
             "upload": "upload-secret", "write_enabler": "write-enabler"}
    return [("X-Tahoe-Authorization", f"{names[k]} {base64.b64encode(v).decode()}")
            for k, v in values.items()]


def si_path(storage_index: bytes) -> str:
    """A storage index as it goes into a path."""
    return base32.b2a(storage_index)


@dataclass
class HTTPStorage:
    """Requests to one node, over one connection reopened when the server closes it."""

    address: NodeAddress
    connection: RawConnection | None = field(default=None)

    @property
    def authorization(self) -> tuple[str, str]:
        """The right ``Authorization`` header."""
        return ("Authorization", m.authorization(self.address.swissnum).decode("ascii"))

    def send(self, method: str, target: str, headers: list[tuple[str, str]] | None = None,
             body: bytes = b"", *, authorized: bool = True) -> RawResponse:
        """One request (with ``Content-Length`` and, by default, our authorization)."""
        all_headers = [("Host", "127.0.0.1")]
        if authorized:
            all_headers.append(self.authorization)
        all_headers += headers or []
        if body or method in ("POST", "PUT", "PATCH"):
            all_headers.append(("Content-Length", str(len(body))))
        return self.raw(request_bytes(method, target, all_headers, body), method == "HEAD")

    def raw(self, data: bytes, head: bool = False) -> RawResponse:
        """Bytes as they are, and the answer."""
        if self.connection is None:
            self.connection = RawConnection("127.0.0.1", self.address.port)
        try:
            answer = self.connection.exchange(data, head)
        except ConnectionClosed:
            self.connection.reconnect()
            raise
        if answer.closes:
            self.connection.reconnect()
        return answer

    def close(self) -> None:
        """Close the connection."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None
