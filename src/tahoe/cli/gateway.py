"""How the file-store commands reach the node's web gateway: a small HTTP/1.1 client.

Facts from ``reference/frontends.md`` §2.1 and Tahoe-LAFS 1.20's
``allmydata/scripts/cli.py`` (``FileStoreOptions``) and ``common_http.py``:

* the node directory is ``-d/--node-directory`` (given by the dispatcher as a
  leading ``--node-directory DIR``), else ``~/.tahoe``;
* the gateway URL is ``-u/--node-url`` (it must look like
  ``http(s)://HOST[:PORT]``), else the first line of ``NODEDIR/node.url``;
  a ``/`` is appended if missing;
* ``--dir-cap=CAP`` stands for the ``tahoe:`` alias for one command;
* every request carries ``User-Agent: tahoe-lafs-py/<version> (tahoe-client)``,
  ``Accept: text/plain, application/octet-stream``, ``Connection: close``,
  Tahoe's own ``Hostname: <host>`` and ``Accept-Encoding: identity``.

Better than Tahoe, same bytes on the wire: request bodies of known length are
streamed (``sendfile`` for files), stdin is spooled to memory and, past
:data:`SPOOL_MEMORY_LIMIT`, to a temporary file instead of being read whole
into memory, and response bodies are read in chunks.  The client speaks
HTTP/1.1 over :mod:`socket` itself (``Content-Length``, chunked and
read-until-close bodies): :mod:`http.client` would cost about 40 ms of
imports (``email``, ``ssl``) on every command.  :mod:`ssl` is imported only
for an ``https`` gateway.

Standard library only; no Twisted.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, NoReturn, TextIO

from .._version import APPLICATION_VERSION
from .aliases import DEFAULT_ALIAS, parse_aliases
from .errors import CLIError, GatewayUnreachable, NodeURLError, TransferError, UsageError
from .localio import CHUNK_SIZE, Body

__all__ = ["USER_AGENT", "REQUEST_HEADERS", "DEFAULT_NODEDIR", "ArgumentParser", "HelpShown",
           "add_gateway_options", "Gateway", "Response", "node_directory", "check_node_url",
           "read_node_url", "read_aliases", "gateway_from_args", "report"]

USER_AGENT = f"{APPLICATION_VERSION} (tahoe-client)"
#: Headers sent with every request, after ``Host`` and ``Hostname``.
REQUEST_HEADERS = (
    ("Accept-Encoding", "identity"),
    ("User-Agent", USER_AGENT),
    ("Accept", "text/plain, application/octet-stream"),
    ("Connection", "close"),
)
DEFAULT_NODEDIR = "~/.tahoe"
#: Seconds to wait for the TCP connection when no timeout is configured.
CONNECT_TIMEOUT = 60.0
#: Tahoe's testing knob: a timeout in seconds for every socket operation.
TIMEOUT_VARIABLE = "__TAHOE_CLI_HTTP_TIMEOUT"

_MAX_LINE = 65536
_MAX_HEADERS = 200
# A cap inside a request path or query, plain or percent-quoted, up to the next separator.
_CAP_IN_URL = re.compile(r"URI(?::|%3A)[^/?&#\s]*", re.IGNORECASE)
# http(s)://HOST[:PORT][/PATH], HOST a name, an IPv4 address or a bracketed IPv6 address.
_NODE_URL = re.compile(
    r"(?P<scheme>https?)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s/:?#\[\]@]+)"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?(?P<path>/[^\s?#]*)?")


# ---------------------------------------------------------------------------
# Command-line options shared by the file-store commands
# ---------------------------------------------------------------------------

class HelpShown(Exception):
    """``--help`` was given and the help text has been written (exit status 0)."""


def _columns() -> int:
    try:
        return os.get_terminal_size(1).columns
    except (OSError, ValueError):
        return 80


class ArgumentParser(argparse.ArgumentParser):
    """argparse writing help to the command's stdout and raising :class:`UsageError`.

    The help formatter gets the terminal width from here: argparse would
    import :mod:`shutil` for it (about 3 ms) on every ``add_argument``.
    """

    def __init__(self, stdout: TextIO, **kwargs: Any) -> None:
        formatter_class = kwargs.pop("formatter_class", argparse.HelpFormatter)
        width = _columns() - 2
        kwargs["formatter_class"] = lambda prog: formatter_class(prog, width=width)
        super().__init__(**kwargs)
        self._stdout = stdout

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"Usage: {self.format_usage().strip().removeprefix('usage: ')}\n"
                         f"{self.prog}: error: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._stdout.write(message)
        raise HelpShown()

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            self._stdout.write(message)

    def fail(self, message: str) -> NoReturn:
        """Raise a usage error with this command's usage line."""
        self.error(message)


def add_gateway_options(parser: argparse.ArgumentParser) -> None:
    """Add ``-u/--node-url`` and ``--dir-cap``, and the hidden forms of the global options."""
    parser.add_argument("-u", "--node-url", metavar="URL",
                        help="the URL of the gateway, such as 'http://127.0.0.1:3456'"
                        " (overrides the node directory's node.url)")
    parser.add_argument("--dir-cap", metavar="CAP",
                        help="the directory cap to use as the 'tahoe' alias")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    parser.add_argument("-q", "--quiet", action="store_true", help=argparse.SUPPRESS)


# ---------------------------------------------------------------------------
# Finding the gateway
# ---------------------------------------------------------------------------

def node_directory(option: str | None, env: Mapping[str, str]) -> str:
    """The absolute node directory: ``option`` if given, else ``~/.tahoe``.

    A leading ``~`` is expanded with ``env["HOME"]`` when set.
    """
    path = option or DEFAULT_NODEDIR
    if (path == "~" or path.startswith("~/")) and env.get("HOME"):
        path = env["HOME"] + path[1:]
    return os.path.abspath(os.path.expanduser(path))


def check_node_url(text: str) -> str:
    """``text`` if it is a gateway URL ``http(s)://HOST[:PORT][/PATH]``, with a ``/`` appended.

    :raises UsageError: otherwise (Tahoe's message; ``127.0.0.1:3456`` is refused).
    """
    match = _NODE_URL.fullmatch(text)
    if match is None or (match["port"] is not None and int(match["port"]) > 65535):
        raise UsageError("--node-url is required to be a string and look like"
                         f" \"http://HOSTNAMEORADDR:PORT\", not: {text!r}")
    return text if text.endswith("/") else text + "/"


def read_node_url(nodedir: str) -> str:
    """The gateway URL from the first line of ``nodedir/node.url``, ending with ``/``.

    :raises NodeURLError: if the file is missing, unreadable or holds no URL.
    """
    path = os.path.join(nodedir, "node.url")
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline().strip()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise NodeURLError(
            f"Error: cannot read the gateway URL from {path}: {reason}\n"
            "Is the node running (it writes node.url when its web server starts)?"
            " Name its directory with -d/--node-directory, or give the URL with -u.") from None
    try:
        return check_node_url(line)
    except UsageError:
        raise NodeURLError(f"Error: {path} does not hold a gateway URL"
                           f" (http://HOST:PORT/): {line!r}") from None


def read_aliases(nodedir: str) -> dict[str, str]:
    """The aliases of a node directory (``private/aliases``, legacy ``private/root_dir.cap``).

    Missing or unreadable files count as empty, as in Tahoe.
    """
    texts = []
    for name in ("root_dir.cap", "aliases"):
        try:
            with open(os.path.join(nodedir, "private", name), encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError):
            texts.append("")
    return parse_aliases(texts[1], texts[0])


def _timeout(env: Mapping[str, str]) -> float | None:
    value = env.get(TIMEOUT_VARIABLE)
    try:
        return float(value) if value else None
    except ValueError:
        return None


def gateway_from_args(args: argparse.Namespace, env: Mapping[str, str],
                      parser: ArgumentParser | None = None) -> Gateway:
    """The gateway named by the parsed ``-u``/``-d``/``--dir-cap`` options.

    :param parser: when given, a malformed ``--node-url`` is reported with its usage line.
    :raises UsageError: for a malformed ``--node-url``.
    :raises NodeURLError: when ``node.url`` cannot be read.
    """
    nodedir = node_directory(args.node_directory, env)
    if args.node_url:
        try:
            url = check_node_url(args.node_url)
        except UsageError as e:
            if parser is None:
                raise
            parser.fail(str(e))
    else:
        url = read_node_url(nodedir)
    return Gateway(url, nodedir=nodedir, dir_cap=args.dir_cap, timeout=_timeout(env))


# ---------------------------------------------------------------------------
# Request bodies
# ---------------------------------------------------------------------------

class Response:
    """An HTTP response whose status line and headers have been read; the body is streamed.

    :ivar status: the status code.
    :ivar reason: the reason phrase.
    :ivar headers: header names in lower case -> values (repeated headers joined by ``, ``).
    :ivar length: the body length from ``Content-Length``, or None when not known in advance.
    """

    def __init__(self, sock: socket.socket, reader: BinaryIO, method: str, url: str) -> None:
        self._sock = sock
        self._reader = reader
        self.url = url
        while True:
            self.status, self.reason = self._read_status_line()
            self.headers = self._read_headers()
            if not 100 <= self.status < 200 or self.status == 101:
                break
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self._remaining: int | None = None  # bytes left in a Content-Length body
        self.length: int | None = None
        self._done = method == "HEAD" or self.status in (204, 304) or self.status < 200
        if not self._done and not self.chunked and "content-length" in self.headers:
            try:
                self.length = int(self.headers["content-length"].split(",")[0].strip())
            except ValueError:
                raise TransferError(f"Error: bad Content-Length from {url}:"
                                    f" {self.headers['content-length']!r}") from None
            if self.length < 0:
                raise TransferError(f"Error: bad Content-Length from {url}: {self.length}")
            self._remaining = self.length
        if self._done:
            self.length = 0

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _readline(self) -> bytes:
        line = self._reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise TransferError(f"Error: the gateway at {self.url} sent an overlong line")
        return line

    def _read_status_line(self) -> tuple[int, str]:
        line = self._readline()
        if not line:
            raise TransferError(f"Error: the gateway closed the connection without answering"
                                f" ({self.url})")
        parts = line.decode("iso-8859-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise TransferError(f"Error: {self.url} did not answer with HTTP: {line[:100]!r}")
        return int(parts[1]), parts[2] if len(parts) > 2 else ""

    def _read_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for _ in range(_MAX_HEADERS):
            line = self._readline()
            if line in (b"\r\n", b"\n", b""):
                return headers
            name, colon, value = line.decode("iso-8859-1").partition(":")
            if colon:
                key = name.strip().lower()
                value = value.strip()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
        raise TransferError(f"Error: the gateway at {self.url} sent too many headers")

    def _read_exactly(self, size: int) -> bytes:
        data = self._reader.read(size)
        if len(data) < size:
            raise TransferError("Error: the gateway closed the connection in the middle of"
                                f" the response ({self.url})")
        return data

    def chunks(self, size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """The body, in pieces of at most ``size`` bytes.

        :raises TransferError: if the connection ends before the body does.
        """
        try:
            if self._done:
                return
            if self.chunked:
                yield from self._chunked_pieces(size)
            elif self._remaining is not None:
                while self._remaining > 0:
                    piece = self._read_exactly(min(size, self._remaining))
                    self._remaining -= len(piece)
                    yield piece
            else:
                while piece := self._reader.read(size):
                    yield piece
            self._done = True
        except OSError as e:
            raise TransferError(f"Error: the connection to {self.url} broke: {e}") from None

    def _chunked_pieces(self, size: int) -> Iterator[bytes]:
        while True:
            line = self._readline()
            try:
                chunk_size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                if not line:
                    raise TransferError("Error: the gateway closed the connection in the"
                                        f" middle of the response ({self.url})") from None
                raise TransferError(f"Error: bad chunk header from {self.url}: {line[:100]!r}"
                                    ) from None
            if chunk_size == 0:
                self._read_headers()  # trailers
                return
            while chunk_size > 0:
                piece = self._read_exactly(min(size, chunk_size))
                chunk_size -= len(piece)
                yield piece
            self._readline()  # the CRLF after the chunk's data

    def read(self, limit: int | None = None) -> bytes:
        """The rest of the body (at most ``limit`` bytes when given) as one bytes object."""
        parts = []
        total = 0
        for piece in self.chunks():
            parts.append(piece)
            total += len(piece)
            if limit is not None and total >= limit:
                break
        return b"".join(parts)[:limit]

    def close(self) -> None:
        """Close the connection."""
        try:
            self._reader.close()
        finally:
            self._sock.close()


# ---------------------------------------------------------------------------
# The gateway
# ---------------------------------------------------------------------------

class Gateway:
    """A node's web gateway at ``node_url``, with the aliases of ``nodedir``.

    :param node_url: ``http(s)://HOST[:PORT][/PATH]/`` (checked, ending with ``/``).
    :param nodedir: the node directory (for ``private/aliases``).
    :param dir_cap: replaces the ``tahoe`` alias when given (``--dir-cap``).
    :param timeout: seconds for every socket operation, or None for none (connecting
        then waits :data:`CONNECT_TIMEOUT`).
    """

    def __init__(self, node_url: str, *, nodedir: str = "", dir_cap: str | None = None,
                 timeout: float | None = None) -> None:
        match = _NODE_URL.fullmatch(node_url)
        if match is None:
            raise UsageError(f"not a gateway URL: {node_url!r}")
        self.node_url = node_url if node_url.endswith("/") else node_url + "/"
        self.nodedir = nodedir
        self.dir_cap = dir_cap
        self.timeout = timeout
        self.scheme = match["scheme"]
        self.host = match["host"].strip("[]")
        default_port = 443 if self.scheme == "https" else 80
        self.port = int(match["port"]) if match["port"] else default_port
        self.host_header = match["host"] + (f":{self.port}" if match["port"] else "")
        self.base_path = (match["path"] or "/").rstrip("/") + "/"
        self._aliases: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"<Gateway {self.node_url}>"

    def url(self, relative: str) -> str:
        """The absolute URL of ``relative`` (such as ``uri/URI%3ACHK…``)."""
        return self.node_url + relative

    def url_for_messages(self, relative: str) -> str:
        """The absolute URL of ``relative`` with every cap in it replaced by ``[CENSORED]``.

        A cap is the authority to read or write: error messages, which users paste
        into bug reports, never show one (Tahoe's access log does the same).
        """
        return self.node_url + _CAP_IN_URL.sub("[CENSORED]", relative)

    def aliases(self) -> dict[str, str]:
        """The node directory's aliases, with ``--dir-cap`` as ``tahoe`` (read once)."""
        if self._aliases is None:
            self._aliases = read_aliases(self.nodedir) if self.nodedir else {}
            if self.dir_cap:
                self._aliases[DEFAULT_ALIAS] = self.dir_cap
        return self._aliases

    def _connect(self, url: str, context: str) -> socket.socket:
        try:
            # An ASCII host as bytes skips loading the idna codec.
            host = self.host.encode("ascii") if self.host.isascii() else self.host
            sock = socket.create_connection((host, self.port),  # type: ignore[arg-type]
                                            timeout=self.timeout or CONNECT_TIMEOUT)
            sock.settimeout(self.timeout)
            if self.scheme == "https":
                import ssl  # only for https gateways
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        except OSError as e:
            raise GatewayUnreachable(context, url, e) from None
        return sock

    def request(self, method: str, relative: str, *, body: Body | None = None,
                progress: Callable[[int], None] | None = None,
                sent: Callable[[], None] | None = None,
                context: str = "Error") -> Response:
        """Send ``METHOD node_url+relative`` (with ``body``) and return the response.

        The caller reads the body and closes the response. ``PUT`` and ``POST``
        always carry a ``Content-Length`` (0 without a body), as in Tahoe.

        :param progress: called with the number of body bytes sent after each piece.
        :param sent: called once the whole request is sent, before its answer is read.
        :param context: the start of error messages (``Error during GET``).
        :raises GatewayUnreachable: if the connection cannot be made.
        :raises TransferError: if the connection breaks or the answer is not HTTP.
        """
        url = self.url_for_messages(relative)
        lines = [f"{method} {self.base_path}{relative} HTTP/1.1",
                 f"Host: {self.host_header}", f"Hostname: {self.host}",
                 *(f"{name}: {value}" for name, value in REQUEST_HEADERS)]
        if body is not None or method in ("PUT", "POST"):
            lines.append(f"Content-Length: {body.length if body is not None else 0}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
        sock = self._connect(url, context)
        reader: BinaryIO = sock.makefile("rb", buffering=256 * 1024)
        try:
            send_error: OSError | None = None
            try:
                sock.sendall(head)
                if body is not None:
                    body.send(sock, progress)
                if sent is not None:
                    sent()
            except (BrokenPipeError, ConnectionResetError) as e:
                send_error = e  # the gateway may have answered early: look for its answer
            except OSError as e:
                raise TransferError(f"{context}: sending the request to {url} failed: {e}"
                                    ) from None
            try:
                return Response(sock, reader, method, url)
            except (TransferError, OSError) as e:
                if send_error is not None:
                    e = send_error
                raise TransferError(f"{context}: the request to {url} failed: {e}") from None
        except BaseException:
            reader.close()
            sock.close()
            raise


def report(error: CLIError, stderr: TextIO) -> int:
    """Write ``error``'s message to ``stderr``; return its exit status."""
    stderr.write(f"{error}\n")
    stderr.flush()
    return error.exit_code
