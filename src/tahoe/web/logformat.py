"""An access-log line that never contains a cap (``reference/frontends.md`` §3.12).

A cap is the authority to read (or write) a file: paths under ``/uri/``,
``/cap/``, ``/file/`` and ``/named/`` are logged as ``[CENSORED]``, and so
are the values of the ``uri`` and ``private-key`` arguments and of any
argument holding a cap (``to_dir=``, ``when_done=``, ``return_to=`` may).
The ``Referer`` is censored the same way, its scheme and host kept; a cap
anywhere else in either (``/static/URI:…``) is censored too.
"""
from __future__ import annotations

import re
from typing import Any

_CAP_PATH = re.compile(rb"^((?:[a-z][a-z0-9+.-]*://[^/?#]*)?/(?:uri|cap|file|named)/)[^?#]*",
                       re.IGNORECASE)
_SECRET_ARGS = re.compile(rb"([?&](?:uri|private-key)=)[^&]*")
#: An argument whose value holds a cap, raw or percent-encoded (``URI:``, ``URI%3A``).
_CAP_ARGS = re.compile(rb"([?&][^=&#]*=)[^&#]*?URI(?::|%3A)[^&#]*", re.IGNORECASE)
#: What is left: a cap in any other place, up to the next separator.
_ANY_CAP = re.compile(rb"URI(?::|%3A)[^/?&#\s\"]*", re.IGNORECASE)


def censor_uri(uri: bytes) -> bytes:
    """The request URI with every cap replaced by ``[CENSORED]``."""
    uri = _CAP_PATH.sub(rb"\1[CENSORED]", uri)
    uri = _SECRET_ARGS.sub(rb"\1[CENSORED]", uri)
    uri = _CAP_ARGS.sub(rb"\1[CENSORED]", uri)
    return _ANY_CAP.sub(b"[CENSORED]", uri)


def _quote(value: bytes | None) -> str:
    if not value:
        return "-"
    return value.decode("iso-8859-1").replace("\\", "\\\\").replace('"', '\\"')


def censored_log_line(timestamp: str, request: Any) -> str:
    """Combined-log-format line for ``twisted.web.server.Site(logFormatter=...)``."""
    line = request.method + b" " + censor_uri(request.uri) + b" " + request.clientproto
    referrer = censor_uri(request.getHeader(b"referer") or b"") or None
    return ('"%s" - - %s "%s" %d %s "%s" "%s"' % (
        request.getClientAddress().host if hasattr(request.getClientAddress(), "host") else "-",
        timestamp, _quote(line), request.code,
        request.sentLength or "-", _quote(referrer), _quote(request.getHeader(b"user-agent"))))
