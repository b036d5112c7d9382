"""Security headers of every response, and telling a browser from an API client.

Every response carries ``X-Frame-Options: DENY`` and ``Referrer-Policy:
no-referrer`` (as Tahoe's, ``reference/frontends.md`` §3.1, §3.12), so a cap
in a URL never leaves in a ``Referer``, and a strict Content-Security-Policy:
scripts and styles only from the gateway's own files (no inline script, no
inline style), forms only posting back to it, no framing, nothing fetched
from elsewhere. File contents (whatever a user uploaded) are served
sandboxed: an uploaded HTML page cannot run script with the gateway's
origin.

A *browser* is a client whose ``Accept`` header names ``text/html``
(Tahoe's CLI sends ``text/plain, application/octet-stream``; scripts send
``*/*`` or nothing). Only browsers get the styled error pages and the
readable result pages; API clients keep Tahoe's bodies byte for byte.
"""
from __future__ import annotations

from typing import Any

__all__ = ["CONTENT_SECURITY_POLICY", "FILE_CONTENT_POLICY", "set_file_content_policy",
           "set_security_headers", "wants_html"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
#: For file contents: no script at all (``sandbox``), inline styles allowed for the
#: document's own look, images and media from the gateway.
FILE_CONTENT_POLICY = (
    "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; "
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")


def set_security_headers(request: Any) -> None:
    """The headers every response carries (set before anything is rendered)."""
    request.setHeader(b"X-Frame-Options", b"DENY")
    request.setHeader(b"Referrer-Policy", b"no-referrer")
    request.setHeader(b"X-Content-Type-Options", b"nosniff")
    request.setHeader(b"Content-Security-Policy", CONTENT_SECURITY_POLICY.encode("ascii"))


def set_file_content_policy(request: Any, content_type: bytes) -> None:
    """Serve a file's contents sandboxed (PDFs excepted: Chromium's viewer needs a plugin)."""
    if not content_type.lower().startswith(b"application/pdf"):
        request.setHeader(b"Content-Security-Policy", FILE_CONTENT_POLICY.encode("ascii"))


def wants_html(request: Any) -> bool:
    """Whether the client is a browser asking for a page (its Accept names text/html)."""
    accept = request.getHeader(b"accept") or b""
    return b"text/html" in accept.lower()
