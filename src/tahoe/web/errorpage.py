"""Error pages for browsers: the status, the message, and a way back.

API clients keep Tahoe's plain-text bodies (:func:`tahoe.web.rendering.fail_request`
decides, by :func:`tahoe.web.headers.wants_html`); a browser gets the same
status with a styled page: the message as the gateway gives it, a link to
the directory above the failing path (for ``/uri/CAP/a/b`` that is
``/uri/CAP/a/``), the welcome page, and a Back button the script reveals.
"""
from __future__ import annotations

from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from twisted.web import resource

from .headers import set_security_headers, wants_html
from .page import esc, page

__all__ = ["NotFoundResource", "error_page", "parent_directory"]


def parent_directory(path: str) -> str | None:
    """The directory page above ``path`` when it names something under ``/uri/CAP/``."""
    parts = path.split("?", 1)[0].rstrip("/").split("/")
    if len(parts) < 4 or parts[1] not in ("uri", "cap"):
        return None
    return "/".join(parts[:-1]) + "/"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def error_page(status: int, message: str, path: str) -> bytes:
    """The HTML page of an error with ``status`` and ``message`` at request ``path``."""
    links = []
    parent = parent_directory(path)
    if parent is not None:
        name = unquote(parent.rstrip("/").rsplit("/", 1)[-1])
        label = "the directory above" if name.lower().startswith(("uri:", "uri%3a")) \
            else f"“{name}”"
        links.append(f'<a class="button" href="{esc(parent)}">Back to {esc(label)}</a>')
    links.append('<a class="button" href="/">Welcome page</a>')
    links.append('<button type="button" class="back" hidden>Back</button>')
    main = (f'<p class="notice notice-bad" role="alert"><strong>{status} '
            f"{esc(_reason(status))}</strong></p>"
            f'<pre class="message">{esc(message)}</pre>'
            f'<p class="actions">{"".join(links)}</p>')
    return page(f"{status} - {_reason(status)}", main, script=True,
                heading="Something went wrong")


class NotFoundResource(resource.Resource):
    """A path the gateway does not serve: a styled 404 for browsers, Twisted's page otherwise."""

    isLeaf = True

    def render(self, request: Any) -> bytes:
        """404 for every method."""
        set_security_headers(request)
        if not wants_html(request):
            return resource.NoResource().render(request)  # type: ignore[no-any-return]
        request.setResponseCode(404)
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return error_page(404, "There is nothing at this address.",
                          request.path.decode("utf-8", "replace"))
