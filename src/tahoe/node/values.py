"""Value syntaxes of ``tahoe.cfg``: booleans, integers, sizes, durations, dates,
server endpoint strings and connection hints (pure).

Each parser raises a plain :class:`ValueError` whose text is the problem; the
``tahoe.cfg`` reader (:mod:`tahoe.node.config`) adds the file, section and key.
References: ``reference/frontends.md`` §1.4-1.5, ``reference/storage-protocol.md``
§5.5 (durations, dates), §6.1 (sizes), §7.6 (tub.port, tub.location);
``docs/formats/node-config.md``.
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Mapping


_TRUE = frozenset({"1", "yes", "true", "on"})
_FALSE = frozenset({"0", "no", "false", "off"})
_SCALES = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_SIZE_RE = re.compile(r"\A([0-9]+)([KMGTPE]?)(I?)(B?)\Z")
_DIGITS_RE = re.compile(r"\A[0-9]+\Z")
_DATE_RE = re.compile(r"\A([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_DAY = 24 * 60 * 60
_DURATION_UNITS = (("month", 31 * _DAY), ("mo", 31 * _DAY), ("day", _DAY), ("year", 365 * _DAY))
_LEGACY_HINT_RE = re.compile(r"\A([A-Za-z0-9.\-]+):([0-9]+)\Z")
_HINT_TYPE_RE = re.compile(r"\A[a-z][a-z0-9+\-]*\Z")

# Server endpoint types we accept, with the parameter names of each, positional order first.
_ENDPOINT_PARAMS: Mapping[str, tuple[str, ...]] = {
    "tcp": ("port", "backlog", "interface"),
    "tcp6": ("port", "backlog", "interface"),
    "ssl": ("port", "privateKey", "certKey", "sslmethod", "interface", "backlog",
            "extraCertChain", "dhParameters"),
    "unix": ("address", "mode", "backlog", "lockfile"),
    "systemd": ("domain", "index", "name"),
}
_PLUGIN_ENDPOINTS = frozenset({"onion", "i2p"})  # txtorcon / txi2p; checked only for syntax
#: The special ``tub.port`` items that ask the Tor or I2P provider for a listener.
TUB_LISTENERS = ("listen:tor", "listen:i2p")


def parse_bool(text: str) -> bool:
    """``true/yes/on/1`` or ``false/no/off/0``, any case.

    :raises ValueError: for anything else, the empty string included.
    """
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"expected a boolean (true/yes/on/1 or false/no/off/0), got {text!r}")


def parse_int(text: str, minimum: int = 0, maximum: int | None = None) -> int:
    """A decimal integer (ASCII digits only) in ``minimum..maximum``.

    :raises ValueError: if it is not one, or out of range.
    """
    digits = text.strip()
    if not _DIGITS_RE.match(digits):
        raise ValueError(f"expected an integer, got {text!r}")
    value = int(digits)
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and at most {maximum}"
        raise ValueError(f"expected an integer of at least {minimum}{upper}, got {value}")
    return value


def parse_size(text: str) -> int:
    """A size string, in bytes (storage-protocol.md §6.1).

    A number, then optionally a scale K/M/G/T/P/E, ``i`` for powers of 1024 and
    ``B``, case-insensitive: ``1G`` = 10**9, ``1Gi`` = ``1GiB`` = 2**30,
    ``100MB`` = 10**8. The empty string is 0.

    :raises ValueError: if the text does not have that form.
    """
    if not text.strip():
        return 0
    m = _SIZE_RE.match(text.strip().upper())
    if not m:
        raise ValueError(f"unparseable size {text!r} (use e.g. 100MB, 1G or 1GiB)")
    number, scale, binary, _ = m.groups()
    return int(number) * (1024 if binary else 1000) ** _SCALES[scale]


def parse_duration(text: str) -> int:
    """A lease duration in seconds: ``60 days``, ``2mo``, ``3 month``, ``1year``, …

    Units: day (86400 s), month or mo (31 days), year (365 days), with an
    optional trailing ``s``. (storage-protocol.md §5.5)

    :raises ValueError: without a unit or a whole number.
    """
    rest = text.strip().lower()
    if rest.endswith("s"):
        rest = rest[:-1]
    for unit, seconds in _DURATION_UNITS:
        if rest.endswith(unit):
            number = rest[: -len(unit)].strip()
            if _DIGITS_RE.match(number):
                return int(number) * seconds
            break
    raise ValueError(f"expected a duration such as '60 days', '2mo' or '1year', got {text!r}")


def parse_date(text: str) -> int:
    """``YYYY-MM-DD`` as seconds since the epoch at midnight UTC.

    :raises ValueError: on another form or an impossible date.
    """
    m = _DATE_RE.match(text.strip())
    try:
        if not m:
            raise ValueError
        day = datetime.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        raise ValueError(f"expected a date as YYYY-MM-DD, got {text!r}") from None
    return (day.toordinal() - datetime.date(1970, 1, 1).toordinal()) * _DAY


def split_comma_list(text: str) -> tuple[str, ...]:
    """The non-empty items of a comma-separated list, stripped."""
    return tuple(p for p in (part.strip() for part in text.split(",")) if p)


def _endpoint_tokens(text: str) -> list[tuple[str | None, str]]:
    """Split a Twisted endpoint string on unescaped ``:``; split ``key=value`` arguments."""
    args: list[tuple[str | None, str]] = []
    key: str | None = None
    current: list[str] = []
    chars = iter(text)
    for ch in chars:
        if ch == "\\":
            current.append(next(chars, ""))
        elif ch == ":":
            args.append((key, "".join(current)))
            key, current = None, []
        elif ch == "=" and key is None:
            key, current = "".join(current), []
        else:
            current.append(ch)
    args.append((key, "".join(current)))
    return args


def parse_server_endpoint(text: str, allow_port_zero: bool = False) -> str:
    """Check a Twisted server endpoint string; return it, a bare number made ``tcp:N``.

    ``tcp``/``tcp6``/``ssl`` need a port in 1..65535 (0 too if
    ``allow_port_zero``); ``unix`` needs an address; the parameters must be
    ``key=value`` with names that endpoint type takes. ``onion:`` and ``i2p:``
    (plugin endpoints) are checked for syntax only.

    :raises ValueError: naming what is wrong.
    """
    text = text.strip()
    if _DIGITS_RE.match(text):
        text = f"tcp:{int(text)}"
    tokens = _endpoint_tokens(text)
    kind_key, kind = tokens[0]
    if kind_key is not None or not kind:
        raise ValueError(f"endpoint {text!r} does not start with a type such as 'tcp:'")
    if kind in _PLUGIN_ENDPOINTS:
        if any(k == "" for k, _ in tokens[1:]):
            raise ValueError(f"endpoint {text!r} has a parameter without a name")
        return text
    names = _ENDPOINT_PARAMS.get(kind)
    if names is None:
        known = ", ".join(sorted([*_ENDPOINT_PARAMS, *_PLUGIN_ENDPOINTS]))
        raise ValueError(f"endpoint {text!r} has unknown type {kind!r} (known: {known})")
    values: dict[str, str] = {}
    positional = [v for k, v in tokens[1:] if k is None]
    if len(positional) > len(names):
        raise ValueError(f"endpoint {text!r} has too many ':'-separated parameters")
    values.update(zip(names, positional))
    for k, v in tokens[1:]:
        if k is None:
            continue
        if k not in names:
            raise ValueError(f"endpoint {text!r} has unknown parameter {k!r} for {kind!r}"
                             f" (allowed: {', '.join(names)})")
        if k in values:
            raise ValueError(f"endpoint {text!r} gives parameter {k!r} twice")
        values[k] = v
    first = names[0]
    if not values.get(first):
        raise ValueError(f"endpoint {text!r} lacks its {first}")
    if first == "port":
        low = 0 if allow_port_zero else 1
        try:
            parse_int(values["port"], low, 65535)
        except ValueError:
            raise ValueError(f"endpoint {text!r} has port {values['port']!r};"
                             f" expected a number from {low} to 65535") from None
    if "backlog" in values:
        try:
            parse_int(values["backlog"], 1)
        except ValueError:
            raise ValueError(f"endpoint {text!r} has a bad backlog {values['backlog']!r}") from None
    return text


def endpoint_port(text: str) -> int | None:
    """The port number of a ``tcp``/``tcp6``/``ssl`` endpoint, or ``None`` for other types.

    Used to expand ``AUTO`` in ``tub.location``. Assumes ``text`` passed
    :func:`parse_server_endpoint`.
    """
    tokens = _endpoint_tokens(text.strip())
    if tokens[0] not in ((None, "tcp"), (None, "tcp6"), (None, "ssl")):
        return None
    for key, value in tokens[1:]:
        if key in (None, "port"):
            return int(value) if _DIGITS_RE.match(value) else None
    return None


def parse_hint(text: str) -> tuple[str, str]:
    """Check one connection hint of ``tub.location``; return ``(type, hint)``.

    ``tcp:HOST:PORT`` (HOST may be ``[ipv6]``), a legacy ``HOST:PORT`` (type
    ``tcp``), ``AUTO`` (type ``AUTO``), or ``TYPE:REST`` for other types such as
    ``tor`` or ``i2p``.

    :raises ValueError: for an empty hint, a tcp hint without host or with a
        port outside 1..65535, or text that has no type.
    """
    hint = text.strip()
    if hint == "AUTO":
        return "AUTO", hint
    if _LEGACY_HINT_RE.match(hint):
        _check_hint_port(hint, hint.rsplit(":", 1)[1])
        return "tcp", hint
    kind, sep, rest = hint.partition(":")
    if not sep or not rest or not _HINT_TYPE_RE.match(kind):
        raise ValueError(f"connection hint {hint!r} is not of the form TYPE:ADDRESS"
                         " (for example tcp:example.org:3457)")
    if kind == "tcp":
        host, sep, port = rest.rpartition(":")
        if not sep or not host or (host.startswith("[") != host.endswith("]")):
            raise ValueError(f"connection hint {hint!r} is not of the form tcp:HOST:PORT")
        _check_hint_port(hint, port)
    return kind, hint


def _check_hint_port(hint: str, port: str) -> None:
    try:
        parse_int(port, 1, 65535)
    except ValueError:
        raise ValueError(f"connection hint {hint!r} has port {port!r};"
                         " expected a number from 1 to 65535") from None


#: Units of ``[s3]multipart.max_age`` besides :func:`parse_duration`'s days, months, years.
_SHORT_AGE_UNITS = (("seconds", 1), ("second", 1), ("sec", 1), ("s", 1), ("minutes", 60),
                    ("minute", 60), ("min", 60), ("hours", 3600), ("hour", 3600), ("h", 3600))
_S3_REGION_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def parse_age(text: str) -> int:
    """An age in seconds: a bare number of seconds, ``90 seconds``, ``30 min``, ``12 hours``,
    or what :func:`parse_duration` takes (``7 days``, ``2mo``, ``1year``).

    :raises ValueError: for anything else, or an age of zero.
    """
    rest = text.strip().lower()
    seconds: int | None = None
    if rest.isdigit():
        seconds = int(rest)
    else:
        for unit, size in _SHORT_AGE_UNITS:
            number = rest[:-len(unit)].strip()
            if rest.endswith(unit) and number.isdigit():
                seconds = int(number) * size
                break
        else:
            try:
                seconds = parse_duration(rest)
            except ValueError:
                raise ValueError("expected an age such as '3600', '12 hours' or '7 days',"
                                 f" got {text!r}") from None
    if seconds <= 0:
        raise ValueError(f"the age must be more than zero, got {text!r}")
    return seconds


def parse_s3_region(text: str) -> str:
    """An S3 region name (``[s3]region``): lower-case letters, digits and ``-``."""
    region = text.strip()
    if not region or not set(region) <= _S3_REGION_CHARACTERS:
        raise ValueError("expected a region name of lower-case letters, digits and '-'"
                         f" such as 'us-east-1', got {text!r}")
    return region
