"""``tahoe put [LOCAL|-] [REMOTE]``: upload a file through the node's gateway.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3, ``allmydata/scripts/tahoe_put.py``):

* no REMOTE: ``PUT /uri`` (an unlinked file); REMOTE a mutable write cap
  (``URI:SSK:``/``URI:MDMF:``): ``PUT /uri/<cap>`` (overwrite it in place);
  otherwise REMOTE is ``[ALIAS:]path`` or ``DIRCAP/path`` and the request is
  ``PUT /uri/<root cap>/<quoted path>``;
* query: ``mutable=true`` (``-m``), ``private-key=<urlsafe base64 DER>``
  (``--private-key-path``, only with ``-m``), ``format=`` as given;
* data from LOCAL, or from stdin when LOCAL is missing or ``-`` (then
  ``waiting for file data on stdin..`` goes to stderr unless ``-q``);
* success: ``200 OK`` or ``201 Created`` on stderr, the cap on stdout; any
  other status: ``Error: <status> <reason>`` and the body, exit status 1.

Files are streamed, never read whole into memory (stdin is spooled, see
:func:`tahoe.cli.localio.spool_stream`); a progress bar shows on a terminal for
large files. Standard library only.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any, BinaryIO, TextIO

from .aliases import escape_path, quote_cap, resolve_path
from .errors import CLIError, HTTPStatusError, LocalFileError, UsageError
from .gateway import (ArgumentParser, Gateway, HelpShown, add_gateway_options,
                      gateway_from_args, report)
from .localio import Body, body_from_path, maybe_progress_bar, maybe_watch_upload, spool_stream

__all__ = ["run", "target_path", "query_arguments", "private_key_argument"]

FORMATS = ("CHK", "SDMF", "MDMF")
#: Remote arguments that are mutable-file write caps, overwritten in place.
MUTABLE_WRITECAP_PREFIXES = ("URI:MDMF:", "URI:SSK:")
PRIVATE_KEY_NEEDS_MUTABLE = ("Error: --private-key-path can only be used for mutable files"
                             " (add -m/--mutable)")
#: The most of an error body kept for the message.
ERROR_BODY_LIMIT = 1024 * 1024

_DESCRIPTION = """\
Put a file into the grid, copying its contents from the local filesystem. If
REMOTE is missing, upload the file but do not link it into a directory; also
print the new filecap to stdout. If LOCAL is missing or '-', data will be
copied from stdin. REMOTE is assumed to start with tahoe: unless otherwise
specified. If the destination file already exists and is mutable, it will be
modified in-place, whether or not --mutable is specified.
"""
_EPILOG = """\
examples:
  cat FILE | tahoe put                # create unlinked file from stdin
  cat FILE | tahoe put -              # same
  tahoe put bar                       # create unlinked file from local 'bar'
  cat FILE | tahoe put - FOO          # create tahoe:FOO from stdin
  tahoe put bar FOO                   # copy local 'bar' to tahoe:FOO
  tahoe put bar tahoe:FOO             # same
  tahoe put bar MUTABLE-FILE-WRITECAP # modify the mutable file in-place
"""


def _parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(stdout, prog="tahoe put",
                            usage="tahoe [global-options] put [options] [LOCAL|-] [REMOTE]",
                            description=_DESCRIPTION, epilog=_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-m", "--mutable", action="store_true",
                        help="create a mutable file instead of an immutable one (like"
                        " --format=SDMF)")
    parser.add_argument("--format", help="create a file with the given format: SDMF and MDMF"
                        " for mutable, CHK (default) for immutable (case-insensitive)")
    parser.add_argument("--private-key-path", metavar="PEM",
                        help="(mutable files only; dangerous) a PEM file holding the 2048-bit"
                        " RSA key that signs the new mutable file and so determines its cap")
    add_gateway_options(parser)
    parser.add_argument("local", nargs="?", metavar="LOCAL")
    parser.add_argument("remote", nargs="?", metavar="REMOTE")
    return parser


def target_path(gateway: Gateway, remote: str | None) -> str:
    """The request path (relative to the gateway URL) for uploading to ``remote``.

    :raises UnknownAliasError: for an unknown alias.
    :raises CLIError: if the path part starts with ``/``.
    """
    if remote is None:
        return "uri"
    if remote.startswith(MUTABLE_WRITECAP_PREFIXES):
        return "uri/" + quote_cap(remote)
    root_cap, path = resolve_path(gateway.aliases(), remote)
    if path.startswith("/"):
        suggestion = remote.replace("/", "", 1)
        raise CLIError("Error: The remote filename must not start with a slash\n"
                       f"Please try again, perhaps with '{suggestion}'")
    return f"uri/{quote_cap(root_cap)}/{escape_path(path)}"


def query_arguments(*, mutable: bool, file_format: str | None,
                    private_key: str | None) -> str:
    """The query string (with its ``?``, or empty) in Tahoe's order.

    :raises UsageError: for a private key without ``mutable``.
    """
    arguments = []
    if mutable:
        arguments.append("mutable=true")
        if private_key is not None:
            arguments.append(f"private-key={private_key}")
    elif private_key is not None:
        raise UsageError(PRIVATE_KEY_NEEDS_MUTABLE)
    if file_format:
        arguments.append(f"format={file_format}")
    return "?" + "&".join(arguments) if arguments else ""


# ---------------------------------------------------------------- private keys

_RSA_ENCRYPTION_OID = bytes.fromhex("06092a864886f70d010101")  # 1.2.840.113549.1.1.1


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(encoded)]) + encoded


def _der(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _der_length(len(content)) + content


def _der_read(data: bytes, position: int) -> tuple[int, bytes, int]:
    """One DER element at ``position``: ``(tag, content, next position)``."""
    if position + 2 > len(data):
        raise ValueError("truncated DER")
    tag, first = data[position], data[position + 1]
    position += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or position + count > len(data):
            raise ValueError("bad DER length")
        length = int.from_bytes(data[position:position + count], "big")
        position += count
    if position + length > len(data):
        raise ValueError("truncated DER")
    return tag, data[position:position + length], position + length


def _pkcs8_from_pem(pem: bytes) -> bytes:
    """The PKCS#8 DER of an unencrypted RSA private key in PEM (PKCS#8 or PKCS#1)."""
    import base64
    import binascii
    text = pem.decode("ascii", "replace")
    for label in ("PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY"):
        begin, end = f"-----BEGIN {label}-----", f"-----END {label}-----"
        start = text.find(begin)
        if start == -1:
            continue
        stop = text.find(end, start)
        if stop == -1:
            raise ValueError(f"no '{end}' line")
        body = text[start + len(begin):stop]
        if label == "ENCRYPTED PRIVATE KEY" or "ENCRYPTED" in body.split("\n\n")[0]:
            raise ValueError("the key is encrypted; give an unencrypted key")
        lines = [line for line in body.strip().splitlines() if ":" not in line]
        try:
            der = base64.b64decode("".join(lines), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("bad base64 in the PEM block") from None
        if label == "RSA PRIVATE KEY":  # PKCS#1: wrap it as PKCS#8 does
            _der_read(der, 0)
            algorithm = _der(0x30, _RSA_ENCRYPTION_OID + b"\x05\x00")
            return _der(0x30, b"\x02\x01\x00" + algorithm + _der(0x04, der))
        tag, content, _ = _der_read(der, 0)
        _, _, position = _der_read(content, 0)  # version
        _, algorithm, _ = _der_read(content, position)
        if tag != 0x30 or not algorithm.startswith(_RSA_ENCRYPTION_OID):
            raise ValueError("not an RSA private key")
        return der
    raise ValueError("no PEM private key block found")


def private_key_argument(pem: bytes) -> str:
    """The ``private-key=`` value for a PEM RSA key: its PKCS#8 DER, urlsafe base64.

    Same value as Tahoe's ``load_private_key`` (which re-encodes the key as
    PKCS#8 DER).

    :raises ValueError: if ``pem`` holds no unencrypted RSA private key.
    """
    import base64
    return base64.urlsafe_b64encode(_pkcs8_from_pem(pem)).decode("ascii")


def _load_private_key(path: str) -> str:
    try:
        with open(path, "rb") as f:
            pem = f.read()
    except OSError as e:
        raise LocalFileError(f"Error: cannot read {path}: {e.strerror or e}") from None
    try:
        return private_key_argument(pem)
    except ValueError as e:
        raise CLIError(f"Error: {path} is not a usable private key: {e}") from None


# ---------------------------------------------------------------- the command

def _put(args: argparse.Namespace, parser: ArgumentParser, stdout: TextIO, stderr: TextIO,
         env: Mapping[str, str], stdin: BinaryIO | None) -> int:
    if args.format and args.format.upper() not in FORMATS:
        parser.fail(f"{args.format} is an invalid format")
    if args.private_key_path is not None and not args.mutable:
        raise UsageError(PRIVATE_KEY_NEEDS_MUTABLE)
    gateway = gateway_from_args(args, env, parser)
    relative = target_path(gateway, args.remote)
    private_key = (_load_private_key(args.private_key_path)
                   if args.private_key_path is not None else None)
    relative += query_arguments(mutable=args.mutable, file_format=args.format,
                                private_key=private_key)

    local = None if args.local in (None, "-") else args.local
    body: Body
    if local is not None:
        body = body_from_path(os.path.abspath(local))
    else:
        if not args.quiet:
            stderr.write("waiting for file data on stdin..\n")
            stderr.flush()
        if stdin is None:
            import sys
            stdin = sys.stdin.buffer
        body = spool_stream(stdin)

    # Two bars on a terminal: the bytes sent to the gateway, then (once they are all
    # sent) the gateway's own upload to the storage servers, until the cap comes back.
    bar = maybe_progress_bar(stderr, body.length, "put", quiet=args.quiet)
    watch: list[Any] = []

    def sent() -> None:
        bar.close()
        watch.append(maybe_watch_upload(stderr, gateway, body.length, args.quiet))

    try:
        response = gateway.request("PUT", relative, body=body, progress=bar.update,
                                   sent=sent, context="Error")
    except BaseException:
        if not watch:
            bar.close()
        for upload in filter(None, watch):
            upload.stop(finished=False)
        raise
    finally:
        body.close()
    if not watch:  # the gateway answered before taking the whole body
        bar.close()
    for upload in filter(None, watch):
        upload.stop(finished=response.status in (200, 201))
    with response:
        if response.status not in (200, 201):
            raise HTTPStatusError("Error", response.status, response.reason,
                                  response.read(ERROR_BODY_LIMIT))
        cap = response.read().decode("utf-8", "replace")
    if not args.quiet:
        stderr.write(f"{response.status} {response.reason}\n")
        stderr.flush()
    stdout.write(cap + "\n")
    stdout.flush()
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str], *,
        stdin: BinaryIO | None = None) -> int:
    """``tahoe put``: 0 on success, 1 on any error (usage, local file, gateway, HTTP status).

    :param stdin: where ``-`` reads from (default: the process's standard input).
    """
    parser = _parser(stdout)
    try:
        args = parser.parse_args(argv)
        return _put(args, parser, stdout, stderr, env, stdin)
    except HelpShown:
        return 0
    except CLIError as error:
        return report(error, stderr)
