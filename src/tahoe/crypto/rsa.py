"""RSA-2048 keys and RSASSA-PSS signatures of mutable files, over pycryptodome.

Follows ``reference/mutable-dirnodes.md`` §2.1 and §2.3 (see
``docs/formats/mutable-files.md``):

* signing ("private") keys are PKCS#8 ``PrivateKeyInfo`` DER, verifying
  ("public") keys X.509 ``SubjectPublicKeyInfo`` DER;
* the modulus must be exactly 2048 bits; any public exponent is accepted
  (keys made before Tahoe 1.14 often use e = 17);
* signatures are RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt.

The DER bytes a key was loaded from are kept verbatim: a mutable file's
writekey is a hash of them, so they must never be re-serialized.

This module draws no randomness of its own: key generation and signing
take an optional ``randfunc`` (``n -> n random bytes``); when it is left
out, OpenSSL's generator is used.

Keys are read and checked by pycryptodome; signatures are made and checked
by OpenSSL (the ``cryptography`` package, which Twisted loads for TLS
anyway): a signature costs 0.27 ms there against 1.06 ms in pycryptodome, a
check 0.023 ms against 0.10 ms. A servermap update checks every share's
signature, and the shares of one version carry the same one, so the outcome
of a check is remembered by its exact bytes (:func:`_checked`). Signing with
a given salt or ``randfunc`` (test vectors) stays with pycryptodome.

pycryptodome (with cffi and pycparser) is imported at the first use of a
key, not with this module: a gateway that never touches a mutable file does
not load it (``docs/performance.md``, memory).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

if TYPE_CHECKING:
    from Crypto.PublicKey import RSA

KEY_BITS = 2048
SIGNATURE_SIZE = KEY_BITS // 8
PSS_SALT_SIZE = 32
DEFAULT_EXPONENT = 65537

RandFunc = Callable[[int], bytes]


class RSAError(ValueError):
    """Root of the errors raised by this module."""


class BadRSAKey(RSAError):
    """Bytes that are not an acceptable RSA key (not DER, not RSA, or not 2048 bits)."""


class BadSignature(RSAError):
    """A signature does not verify under the given verifying key."""


def _import(der: bytes, want_private: bool) -> RSA.RsaKey:
    from Crypto.PublicKey import RSA
    what = "signing (private)" if want_private else "verifying (public)"
    if not isinstance(der, bytes):
        raise BadRSAKey(f"an RSA {what} key must be given as DER bytes")
    try:
        key = RSA.import_key(der)
    except (ValueError, IndexError, TypeError):
        raise BadRSAKey(f"the bytes are not a DER-encoded RSA {what} key") from None
    if key.has_private() != want_private:
        raise BadRSAKey(f"expected an RSA {what} key")
    bits = key.size_in_bits()
    if bits != KEY_BITS:
        raise BadRSAKey(f"RSA keys of mutable files must be {KEY_BITS} bits, not {bits}")
    return key


@functools.lru_cache(maxsize=64)
def _openssl_key(der: bytes, private: bool) -> Any:
    """The OpenSSL key object of DER bytes that :func:`_import` accepted (so OpenSSL's own
    check of a private key, 10-40 ms, is not made again)."""
    from cryptography.hazmat.primitives import serialization
    if private:
        return serialization.load_der_private_key(der, None,
                                                  unsafe_skip_rsa_key_validation=True)
    return serialization.load_der_public_key(der)


def _pss() -> Any:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    return padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=PSS_SALT_SIZE)


@functools.lru_cache(maxsize=256)
def _checked(der: bytes, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is a valid RSASSA-PSS signature over ``message`` by the
    public key ``der`` (remembered: the same bytes always get the same answer)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    try:
        _openssl_key(der, False).verify(signature, message, _pss(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


@frozen
class VerifyingKey:
    """An RSA-2048 public key, with the SubjectPublicKeyInfo DER it was read from.

    :ivar der: the exact DER bytes (their hash is the file's fingerprint).
    """

    der: bytes
    _key: RSA.RsaKey = field(eq=False, repr=False)

    @classmethod
    def from_der(cls, der: bytes) -> "VerifyingKey":
        """Load a verifying key from DER.

        :raises BadRSAKey: if ``der`` is not a 2048-bit RSA public key.
        """
        return cls(der, _import(der, want_private=False))

    @property
    def public_exponent(self) -> int:
        """The public exponent e (65537 for new keys, often 17 for old ones)."""
        return int(self._key.e)

    def verify(self, message: bytes, signature: bytes) -> None:
        """Check an RSASSA-PSS (SHA-256, MGF1, 32-byte salt) signature over ``message``.

        :raises BadSignature: if it does not verify.
        """
        if not isinstance(signature, bytes) or len(signature) != SIGNATURE_SIZE:
            raise BadSignature(f"a signature must be {SIGNATURE_SIZE} bytes")
        if not _checked(self.der, bytes(message), signature):
            raise BadSignature("RSA-PSS signature does not verify")

    def is_valid(self, message: bytes, signature: bytes) -> bool:
        """Tell whether ``signature`` is a valid signature over ``message``."""
        try:
            self.verify(message, signature)
        except BadSignature:
            return False
        return True


@frozen
class SigningKey:
    """An RSA-2048 private key, with the PKCS#8 DER it was read from (its identity).

    :ivar der: the exact PKCS#8 DER bytes; never shown in ``repr``.
    """

    der: bytes = field(repr=False)
    _key: RSA.RsaKey = field(eq=False, repr=False)
    #: OpenSSL's object of a key it generated here (else loaded at the first signature).
    _openssl: Any = field(default=None, eq=False, repr=False)

    @classmethod
    def from_der(cls, der: bytes) -> "SigningKey":
        """Load a signing key from (PKCS#8) DER, keeping the bytes as given.

        :raises BadRSAKey: if ``der`` is not a 2048-bit RSA private key.
        """
        return cls(der, _import(der, want_private=True))

    def verifying_key(self) -> VerifyingKey:
        """The matching verifying key, serialized as SubjectPublicKeyInfo DER."""
        public = self._key.publickey()
        return VerifyingKey(public.export_key("DER"), public)

    def sign(self, message: bytes, salt: bytes | None = None,
             randfunc: RandFunc | None = None) -> bytes:
        """Sign ``message`` with RSASSA-PSS (SHA-256, MGF1-SHA-256, 32-byte salt).

        :param salt: a fixed 32-byte PSS salt, to reproduce test vectors;
            normally left out so that a random one is drawn.
        :param randfunc: where the random salt comes from; OpenSSL's generator when
            None (and then OpenSSL signs).
        :returns: the 256-byte signature.
        :raises ValueError: if ``salt`` is given and is not 32 bytes.
        """
        if salt is None and randfunc is None:
            from cryptography.hazmat.primitives import hashes
            key = self._openssl if self._openssl is not None else _openssl_key(self.der, True)
            return key.sign(message, _pss(), hashes.SHA256())  # type: ignore[no-any-return]
        from Crypto.Hash import SHA256
        from Crypto.Signature import pss
        if salt is not None:
            if len(salt) != PSS_SALT_SIZE:
                raise ValueError(f"a PSS salt must be {PSS_SALT_SIZE} bytes")
            fixed = salt

            def randfunc(count: int) -> bytes:
                return fixed[:count]
        signer = pss.new(self._key, salt_bytes=PSS_SALT_SIZE, rand_func=randfunc)
        return signer.sign(SHA256.new(message))  # type: ignore[no-any-return]


def generate_signing_key(randfunc: RandFunc | None = None,
                         public_exponent: int = DEFAULT_EXPONENT) -> SigningKey:
    """Make a new RSA-2048 key pair (call it from a thread).

    Without ``randfunc`` the key comes from OpenSSL through the
    ``cryptography`` package (already installed with Foolscap), about six
    times faster than pycryptodome's generator (0.06 s against 0.37 s here);
    with one, pycryptodome generates it from that source (tests).

    :param randfunc: ``n -> n random bytes``, or None for OpenSSL's generator.
    :param public_exponent: e; Tahoe uses 65537 for new keys.
    :returns: the signing key, serialized once as PKCS#8 DER.
    """
    from Crypto.PublicKey import RSA
    if randfunc is None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa as openssl_rsa
        generated = openssl_rsa.generate_private_key(public_exponent, KEY_BITS)
        der = generated.private_bytes(serialization.Encoding.DER,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
        # Built from OpenSSL's numbers, without pycryptodome's consistency check (its
        # primality tests cost a third of the generation, ~20 ms): a key OpenSSL has
        # just made is consistent by construction. Keys read from elsewhere (a share,
        # a request) are still checked in full by from_der.
        numbers = generated.private_numbers()
        key = RSA.construct((numbers.public_numbers.n, numbers.public_numbers.e,
                             numbers.d, numbers.p, numbers.q), consistency_check=False)
        return SigningKey(der, key, generated)
    key = RSA.generate(KEY_BITS, randfunc=randfunc, e=public_exponent)
    return SigningKey(key.export_key("DER", pkcs=8), key)
