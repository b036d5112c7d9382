"""Directory and mutable-file calls on a gateway's web API, with the standard library only.

Works against any gateway that follows ``shared/reference/frontends.md`` §3
(Tahoe-LAFS 1.20's or ours); every URL is on 127.0.0.1, so proxies from the
environment are never used.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import attrs

__all__ = ["Response", "WebAPI"]

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_NO_REDIRECT_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                  _NoRedirect())


@attrs.frozen
class Response:
    """An HTTP answer: status, headers (case-insensitive names lower-cased) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


def quote_path(path: str) -> str:
    """Percent-quote each segment of ``a/b/c`` (UTF-8), keeping the slashes."""
    return "/".join(urllib.parse.quote(segment, safe="") for segment in path.split("/"))


@attrs.frozen
class WebAPI:
    """Calls on one gateway (base URL ``http://127.0.0.1:PORT/``)."""

    url: str
    timeout: float = 120.0

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, follow: bool = True) -> Response:
        """Any request; ``path`` starts with ``/`` and is already quoted. Errors are returned."""
        request = urllib.request.Request(self.url.rstrip("/") + path, data=body, method=method,
                                         headers=headers or {})
        opener = _OPENER if follow else _NO_REDIRECT_OPENER
        try:
            with opener.open(request, timeout=self.timeout) as answer:
                return Response(answer.status, {k.lower(): v for k, v in answer.headers.items()},
                                answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, {k.lower(): v for k, v in error.headers.items()},
                            error.read())

    def ok(self, method: str, path: str, body: bytes | None = None,
           expect: tuple[int, ...] = (200, 201), **kwargs: Any) -> Response:
        """A request that must succeed with one of ``expect``."""
        answer = self.request(method, path, body, **kwargs)
        assert answer.status in expect, (method, path, answer.status, answer.text[:2000])
        return answer

    @staticmethod
    def object_path(cap: str, path: str = "") -> str:
        """``/uri/<quoted cap>[/<quoted path>]``."""
        base = "/uri/" + urllib.parse.quote(cap, safe="")
        return base + ("/" + quote_path(path) if path else "")

    def mkdir(self, fmt: str | None = None) -> str:
        """``POST /uri?t=mkdir[&format=]``: a new directory's write cap."""
        query = "?t=mkdir" + (f"&format={fmt}" if fmt else "")
        return self.ok("POST", "/uri" + query).text.strip()

    def put(self, cap: str, path: str, data: bytes, query: str = "") -> Response:
        """``PUT /uri/$CAP/path[?query]`` with ``data``."""
        return self.request("PUT", self.object_path(cap, path) + (f"?{query}" if query else ""),
                            data)

    def get(self, cap: str, path: str = "", query: str = "",
            headers: dict[str, str] | None = None) -> Response:
        """``GET /uri/$CAP[/path][?query]``."""
        return self.request("GET", self.object_path(cap, path) + (f"?{query}" if query else ""),
                            headers=headers)

    def read(self, cap: str, path: str = "") -> bytes:
        """A file's contents (must succeed)."""
        answer = self.get(cap, path)
        assert answer.status == 200, (answer.status, answer.text[:2000])
        return answer.body

    def json(self, cap: str, path: str = "") -> Any:
        """``t=json`` of an object (must succeed)."""
        answer = self.get(cap, path, "t=json")
        assert answer.status == 200, (answer.status, answer.text[:2000])
        return answer.json()

    def children(self, cap: str, path: str = "") -> dict[str, Any]:
        """The ``children`` of a directory's ``t=json``."""
        kind, data = self.json(cap, path)
        assert kind == "dirnode", kind
        result: dict[str, Any] = data["children"]
        return result

    def post(self, cap: str, path: str = "", query: str = "", body: bytes | None = None,
             headers: dict[str, str] | None = None, follow: bool = True) -> Response:
        """``POST /uri/$CAP[/path]?query``."""
        return self.request("POST", self.object_path(cap, path) + (f"?{query}" if query else ""),
                            body if body is not None else b"", headers=headers, follow=follow)

    def create_mutable(self, data: bytes, fmt: str) -> str:
        """``PUT /uri?format=SDMF|MDMF``: a new mutable file's write cap."""
        return self.ok("PUT", f"/uri?format={fmt}", data).text.strip()


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]
              ) -> tuple[bytes, dict[str, str]]:
    """A ``multipart/form-data`` body and its Content-Type header."""
    boundary = "----tahoe-test-boundary-7a3b"
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     .encode() + value.encode("utf-8") + b"\r\n")
    for name, (filename, data) in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                     f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                     .encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def cli_directory(directory: Path, node_url: str, alias: str) -> Path:
    """A CLI node directory (``tahoe -d``) for the gateway at ``node_url``, with a new
    directory under ``alias:``; returns ``directory``."""
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(node_url + "\n")
    dircap = WebAPI(node_url).ok("POST", "/uri?t=mkdir").text
    (directory / "private" / "aliases").write_text(f"{alias}: {dircap}\n")
    return directory
