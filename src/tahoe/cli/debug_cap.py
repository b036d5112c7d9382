"""``tahoe debug dump-cap``: what a cap holds, and the secrets derived from it.

The output is Tahoe-LAFS 1.20's (``scripts/debug.py``): a blank line, a
header naming the kind of cap (``CHK File:``, ``SDMF Writeable URI:``,
``Directory Read-only URI:``…), then one `` name: value`` line per field:
keys, UEB hash, size, k/N, storage index, fingerprint. A directory cap shows
its inner file cap's fields under the directory's header. With a client
secret (``-c``, or ``private/secret`` of ``-d DIR``) the lease secrets for the
file follow, and with a server node id (``-n``, the server's Tub ID in
base32) the per-server lease secrets and, for a mutable write cap, the write
enabler. A gateway URL (``http://…/uri/CAP``) is accepted for the cap.

Better than Tahoe: a literal directory cap (``URI:DIR2-LIT:``) is described
instead of being called an unknown cap. Standard library (and our pure
cores) only.
"""
from __future__ import annotations

import base64
import os
from urllib.parse import unquote, urlparse

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from ..caps.mutable import (MDMFReadCap, MDMFVerifyCap, MDMFWriteCap, SSKReadCap, SSKVerifyCap,
                            SSKWriteCap)
from ..caps.parse import parse_cap_lenient
from ..crypto import lease_secrets
from ..mutable.keys import write_enabler, write_enabler_master
from ..util import base32
from .aliases import quote_output
from .errors import CLIError

__all__ = ["dump_cap", "cap_from_argument", "secret_from_options"]

_FILE_HEADERS = {
    CHKReadCap: "CHK File:", CHKVerifyCap: "CHK Verifier URI:", LiteralCap: "Literal File URI:",
    SSKWriteCap: "SDMF Writeable URI:", SSKReadCap: "SDMF Read-only URI:",
    SSKVerifyCap: "SDMF Verifier URI:", MDMFWriteCap: "MDMF Writeable URI:",
    MDMFReadCap: "MDMF Read-only URI:", MDMFVerifyCap: "MDMF Verifier URI:",
}
_DIRECTORY_HEADERS = {
    "URI:DIR2:": "Directory Writeable URI:", "URI:DIR2-RO:": "Directory Read-only URI:",
    "URI:DIR2-Verifier:": "Directory Verifier URI:",
    "URI:DIR2-MDMF:": "Directory Writeable URI:", "URI:DIR2-MDMF-RO:": "Directory Read-only URI:",
    "URI:DIR2-MDMF-Verifier:": "Directory Verifier URI:",
    "URI:DIR2-CHK:": "CHK Directory URI:", "URI:DIR2-CHK-Verifier:": "CHK Directory Verifier URI:",
    "URI:DIR2-LIT:": "Literal Directory URI:",
}


def cap_from_argument(text: str) -> str:
    """The cap in ``text``: itself, or the part after ``/uri/`` of a gateway URL."""
    if not text.startswith("http"):
        return text
    path = urlparse(text).path
    if not path.startswith("/uri/"):
        raise CLIError(f"Error: {quote_output(text)} is not a gateway URL of the form"
                       " http://HOST:PORT/uri/CAP")
    return unquote(path[len("/uri/"):])


def secret_from_options(client_secret: str | None, client_dir: str | None) -> bytes | None:
    """The client's lease secret from ``-c`` (base32), else ``-d DIR``'s ``private/secret``
    (missing file: none, as in Tahoe).

    :raises CLIError: if ``-c`` is not base32.
    """
    if client_secret:
        try:
            return base32.a2b(client_secret.strip())
        except ValueError:
            raise CLIError("Error: --client-secret must be base32") from None
    if client_dir:
        try:
            with open(os.path.join(client_dir, "private", "secret"), "rb") as f:
                return base32.a2b(f.read().strip())
        except (OSError, ValueError):
            return None
    return None


def quote_bytes(data: bytes) -> str:
    """Bytes as Tahoe quotes them: as text when they are UTF-8, else ``b"…"`` with
    ``\\xNN`` escapes (``"``, ``$``, `````` ` `````` and ``\\`` backslash-escaped)."""
    try:
        return quote_output(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    plain = set(b" !#") | set(range(0x25, 0x5C)) | set(range(0x5D, 0x60)) | set(range(0x61, 0x7F))
    escaped = "".join(chr(byte) if byte in plain else
                      "\\" + chr(byte) if byte in b'"$`\\' else f"\\x{byte:02x}"
                      for byte in data)
    return f'b"{escaped}"'


def nodeid_from_option(text: str | None) -> bytes | None:
    """The server's binary node id from ``-n`` (base32, any case), or None.

    :raises CLIError: if it is not base32.
    """
    if not text:
        return None
    try:
        return base64.b32decode(text.upper() + "=" * (-len(text) % 8))
    except ValueError:
        raise CLIError("Error: --nodeid must be a base32 node id") from None


def _secret_lines(storage_index: bytes, secret: bytes | None, nodeid: bytes | None) -> list[str]:
    if not secret:
        return []
    b2a = base32.b2a
    renewal = lease_secrets.client_renewal_secret(secret)
    file_renewal = lease_secrets.file_renewal_secret(renewal, storage_index)
    cancel = lease_secrets.client_cancel_secret(secret)
    file_cancel = lease_secrets.file_cancel_secret(cancel, storage_index)
    lines = [f" client renewal secret: {b2a(renewal)}", f" file renewal secret: {b2a(file_renewal)}"]
    if nodeid:
        bucket = lease_secrets.bucket_renewal_secret(file_renewal, nodeid)
        lines.append(f" lease renewal secret: {b2a(bucket)}")
    lines += [f" client cancel secret: {b2a(cancel)}", f" file cancel secret: {b2a(file_cancel)}"]
    if nodeid:
        bucket = lease_secrets.bucket_cancel_secret(file_cancel, nodeid)
        lines.append(f" lease cancel secret: {b2a(bucket)}")
    return lines


def _file_lines(cap: object, secret: bytes | None, nodeid: bytes | None) -> list[str]:
    b2a = base32.b2a
    if isinstance(cap, (CHKReadCap, CHKVerifyCap)):
        lines = [f" key: {b2a(cap.key)}"] if isinstance(cap, CHKReadCap) else []
        lines += [f" UEB hash: {b2a(cap.ueb_hash)}", f" size: {cap.size}",
                  f" k/N: {cap.needed}/{cap.total}", f" storage index: {b2a(cap.storage_index)}"]
        if isinstance(cap, CHKReadCap):
            lines += _secret_lines(cap.storage_index, secret, nodeid)
        return lines
    if isinstance(cap, LiteralCap):
        return [f" data: {quote_bytes(cap.data)}"]
    assert isinstance(cap, (SSKWriteCap, SSKReadCap, SSKVerifyCap, MDMFWriteCap, MDMFReadCap,
                            MDMFVerifyCap))
    lines = []
    if isinstance(cap, (SSKWriteCap, MDMFWriteCap)):
        lines.append(f" writekey: {b2a(cap.writekey)}")
    if isinstance(cap, (SSKWriteCap, MDMFWriteCap, SSKReadCap, MDMFReadCap)):
        lines.append(f" readkey: {b2a(cap.readkey)}")
    lines += [f" storage index: {b2a(cap.storage_index)}",
              f" fingerprint: {b2a(cap.fingerprint)}"]
    if isinstance(cap, (SSKWriteCap, MDMFWriteCap)):
        lines.append("")
        if nodeid:
            enabler = write_enabler(write_enabler_master(cap.writekey), nodeid)
            lines += [f" write_enabler: {b2a(enabler)}", ""]
        lines += _secret_lines(cap.storage_index, secret, nodeid)
    return lines


def dump_cap(text: str, secret: bytes | None = None, nodeid: bytes | None = None) -> str:
    """The text ``tahoe debug dump-cap`` prints for the cap ``text``."""
    cap = parse_cap_lenient(text.strip())
    if isinstance(cap, DirectoryCap):
        body = [_DIRECTORY_HEADERS[cap.prefix], *_file_lines(cap.file_cap, secret, nodeid)]
    elif type(cap) in _FILE_HEADERS:
        body = [_FILE_HEADERS[type(cap)], *_file_lines(cap, secret, nodeid)]
    else:
        body = ["unknown cap type"]
    return "\n" + "\n".join(body) + "\n"
