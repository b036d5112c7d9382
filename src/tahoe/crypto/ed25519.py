"""Ed25519 node keys: signing, verifying, and their ``v0-`` text forms.

Pure RFC 8032 Ed25519 (no context, no prehash) over ``cryptography``
(OpenSSL), as Tahoe-LAFS 1.20 signs and verifies; Twisted loads it anyway
for TLS, so a node that uses no other primitive loads no second crypto
library. A public key is checked to be a curve point here (RFC 8032
§5.1.3), which OpenSSL leaves to the first verification. A node key
is a 32-byte seed; its text forms are those of ``storage-protocol.md`` §7.4
(see ``docs/formats/announcements.md``):

* private key file ``private/node.privkey``: ``priv-v0-<base32 seed>`` and a newline;
* public key file ``node.pubkey``: ``pub-v0-<base32 public key>`` and a newline;
* server id (``key_s``, "Node ID"): ``v0-<base32 public key>``.

The seed must come from the caller (``os.urandom(32)`` in a shell): this
module draws no randomness.
"""
from __future__ import annotations

from attrs import field, frozen
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

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


#: edwards25519 (RFC 8032 §5.1): the field prime, the curve constant d, a square root of -1.
_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def is_curve_point(raw: bytes) -> bool:
    """Whether 32 bytes decode to a point of edwards25519 (RFC 8032 §5.1.3): ``y`` below
    the prime, ``x`` recovered from it, and no sign bit on ``x = 0``."""
    y = int.from_bytes(raw, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    if y >= _P:
        return False
    u = (y * y - 1) % _P
    v = (_D * y * y + 1) % _P
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    vxx = v * x * x % _P
    if vxx != u:
        if vxx != (-u) % _P:
            return False
        x = x * _SQRT_M1 % _P
    return not (x == 0 and sign)


def _import_public(raw: bytes) -> Ed25519PublicKey:
    if not is_curve_point(raw):
        raise BadKeyString("the bytes are not an Ed25519 public key (not a curve point)")
    return Ed25519PublicKey.from_public_bytes(raw)


@frozen
class VerifyingKey:
    """An Ed25519 public key (32 bytes), checked to be a valid curve point.

    :raises BadKeyString: if ``raw`` is not 32 bytes or does not decode to a point.
    """

    raw: bytes = field(validator=_check_bytes(PUBLIC_KEY_SIZE, "an Ed25519 public key"))
    _key: Ed25519PublicKey = field(init=False, eq=False, repr=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_key", _import_public(self.raw))

    def verify(self, message: bytes, signature: bytes) -> None:
        """Check a 64-byte signature over ``message``, exactly as given.

        :raises BadSignature: if it does not verify.
        """
        if not isinstance(signature, bytes) or len(signature) != SIGNATURE_SIZE:
            raise BadSignature(f"an Ed25519 signature is {SIGNATURE_SIZE} bytes")
        try:
            self._key.verify(signature, message)
        except InvalidSignature:
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
    _key: Ed25519PrivateKey = field(init=False, eq=False, repr=False, hash=False)
    public_key: VerifyingKey = field(init=False, eq=False)

    def __attrs_post_init__(self) -> None:
        key = Ed25519PrivateKey.from_private_bytes(self.seed)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "public_key", VerifyingKey(key.public_key().public_bytes_raw()))

    def sign(self, message: bytes) -> bytes:
        """Sign ``message`` (pure Ed25519); returns the 64-byte signature."""
        return self._key.sign(message)

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
