"""Ed25519 node keys: signing, verifying, and their ``v0-`` text forms.

Pure RFC 8032 Ed25519 (no context, no prehash) over pycryptodome. A node key
is a 32-byte seed; its text forms are those of ``storage-protocol.md`` §7.4
(see ``docs/formats/announcements.md``):

* private key file ``private/node.privkey``: ``priv-v0-<base32 seed>`` and a newline;
* public key file ``node.pubkey``: ``pub-v0-<base32 public key>`` and a newline;
* server id (``key_s``, "Node ID"): ``v0-<base32 public key>``.

The seed must come from the caller (``os.urandom(32)`` in a shell): this
module draws no randomness.
"""
from __future__ import annotations

from Crypto.PublicKey import ECC
from Crypto.Signature import eddsa
from attrs import field, frozen

from ..util import base32
from ..util.errors import BadBase32, EncodingError

SEED_SIZE = 32
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64

PRIVATE_KEY_PREFIX = "priv-v0-"
PUBLIC_KEY_PREFIX = "pub-v0-"
SERVER_ID_PREFIX = "v0-"
#: Length of a server id: ``v0-`` and 52 base32 characters.
SERVER_ID_LENGTH = len(SERVER_ID_PREFIX) + base32.encoded_length(PUBLIC_KEY_SIZE)


class Ed25519Error(ValueError):
    """Root of the errors raised by this module."""


class BadKeyString(Ed25519Error, EncodingError):
    """A key or server-id string is malformed (prefix, base32, length or curve point)."""


class BadSignature(Ed25519Error):
    """A signature does not verify under the given public key (or is not 64 bytes)."""


def _check_bytes(length: int, what: str):  # type: ignore[no-untyped-def]
    def check(instance: object, attribute: object, value: object) -> None:
        if not isinstance(value, bytes) or len(value) != length:
            raise BadKeyString(f"{what} must be {length} bytes")
    return check


def _import_public(raw: bytes) -> ECC.EccKey:
    try:
        return eddsa.import_public_key(raw)
    except ValueError:
        raise BadKeyString("the bytes are not an Ed25519 public key (not a curve point)") from None


@frozen
class VerifyingKey:
    """An Ed25519 public key (32 bytes), checked to be a valid curve point.

    :raises BadKeyString: if ``raw`` is not 32 bytes or does not decode to a point.
    """

    raw: bytes = field(validator=_check_bytes(PUBLIC_KEY_SIZE, "an Ed25519 public key"))
    _key: ECC.EccKey = field(init=False, eq=False, repr=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_key", _import_public(self.raw))

    def verify(self, message: bytes, signature: bytes) -> None:
        """Check a 64-byte signature over ``message``, exactly as given.

        :raises BadSignature: if it does not verify.
        """
        if not isinstance(signature, bytes) or len(signature) != SIGNATURE_SIZE:
            raise BadSignature(f"an Ed25519 signature is {SIGNATURE_SIZE} bytes")
        try:
            eddsa.new(self._key, "rfc8032").verify(message, signature)
        except ValueError:
            raise BadSignature("signature does not verify") from None

    def is_valid_signature(self, message: bytes, signature: bytes) -> bool:
        """Tell whether ``signature`` verifies over ``message``."""
        try:
            self.verify(message, signature)
        except BadSignature:
            return False
        return True

    @property
    def server_id(self) -> str:
        """``v0-`` and the base32 public key (55 characters)."""
        return SERVER_ID_PREFIX + base32.b2a(self.raw)

    @property
    def short_id(self) -> str:
        """The first 8 base32 characters of the key, as Tahoe shows servers."""
        return base32.b2a(self.raw)[:8]

    def to_string(self) -> str:
        """``pub-v0-<base32>``, without a newline."""
        return PUBLIC_KEY_PREFIX + base32.b2a(self.raw)

    def to_file_bytes(self) -> bytes:
        """The contents of ``node.pubkey``: :meth:`to_string` and a newline, as ASCII."""
        return (self.to_string() + "\n").encode("ascii")


@frozen
class SigningKey:
    """An Ed25519 private key, held as its 32-byte RFC 8032 seed.

    :raises BadKeyString: if ``seed`` is not 32 bytes.
    """

    seed: bytes = field(validator=_check_bytes(SEED_SIZE, "an Ed25519 seed"), repr=False)
    _key: ECC.EccKey = field(init=False, eq=False, repr=False, hash=False)
    public_key: VerifyingKey = field(init=False, eq=False)

    def __attrs_post_init__(self) -> None:
        key = ECC.construct(curve="Ed25519", seed=self.seed)
        object.__setattr__(self, "_key", key)
        raw = key.public_key().export_key(format="raw")
        object.__setattr__(self, "public_key", VerifyingKey(raw))

    def sign(self, message: bytes) -> bytes:
        """Sign ``message`` (pure Ed25519); returns the 64-byte signature."""
        return eddsa.new(self._key, "rfc8032").sign(message)

    def to_string(self) -> str:
        """``priv-v0-<base32 seed>``, without a newline."""
        return PRIVATE_KEY_PREFIX + base32.b2a(self.seed)

    def to_file_bytes(self) -> bytes:
        """The contents of ``private/node.privkey``: :meth:`to_string` and a newline."""
        return (self.to_string() + "\n").encode("ascii")


def _text(value: str | bytes, what: str) -> str:
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            raise BadKeyString(f"{what} must be ASCII") from None
    if not isinstance(value, str):
        raise BadKeyString(f"{what} must be text, not {type(value).__name__}")
    return value


def _strip_file_newline(text: str) -> str:
    # Key files end in one newline; Tahoe strips the file's whitespace.
    return text.rstrip("\r\n\t ")


def _decode_b32(body: str, size: int, what: str) -> bytes:
    if len(body) != base32.encoded_length(size):
        raise BadKeyString(f"{what}: expected {base32.encoded_length(size)} base32 characters, "
                           f"got {len(body)}")
    try:
        return base32.a2b(body)
    except BadBase32:
        raise BadKeyString(f"{what}: not canonical base32") from None


def parse_private_key(text: str | bytes) -> SigningKey:
    """Parse ``priv-v0-<base32 seed>`` (a trailing newline, as in the file, is allowed).

    :raises BadKeyString: on a wrong prefix, bad base32 or a wrong length.
    """
    text = _strip_file_newline(_text(text, "a private key"))
    if not text.startswith(PRIVATE_KEY_PREFIX):
        raise BadKeyString(f"a private key starts with {PRIVATE_KEY_PREFIX!r}")
    return SigningKey(_decode_b32(text[len(PRIVATE_KEY_PREFIX):], SEED_SIZE, "private key"))


def parse_public_key(text: str | bytes) -> VerifyingKey:
    """Parse ``pub-v0-<base32 key>`` (a trailing newline, as in the file, is allowed).

    :raises BadKeyString: on a wrong prefix, bad base32, a wrong length or a
        value that is not a curve point.
    """
    text = _strip_file_newline(_text(text, "a public key"))
    if not text.startswith(PUBLIC_KEY_PREFIX):
        raise BadKeyString(f"a public key starts with {PUBLIC_KEY_PREFIX!r}")
    return VerifyingKey(_decode_b32(text[len(PUBLIC_KEY_PREFIX):], PUBLIC_KEY_SIZE, "public key"))


def parse_server_id(text: str | bytes) -> VerifyingKey:
    """Parse a server id ``v0-<base32 key>`` (exactly, no whitespace) into its key.

    :raises BadKeyString: on a wrong prefix, bad base32, a wrong length or a
        value that is not a curve point.
    """
    text = _text(text, "a server id")
    if not text.startswith(SERVER_ID_PREFIX):
        raise BadKeyString(f"a server id starts with {SERVER_ID_PREFIX!r}")
    return VerifyingKey(_decode_b32(text[len(SERVER_ID_PREFIX):], PUBLIC_KEY_SIZE, "server id"))
