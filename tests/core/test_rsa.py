"""RSA-2048 keys and RSASSA-PSS signatures as Tahoe's mutable files use them."""
from __future__ import annotations

import base64
import hashlib

import pytest
from Crypto.PublicKey import RSA
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.crypto.rsa import (KEY_BITS, SIGNATURE_SIZE, BadRSAKey, BadSignature, SigningKey,
                              VerifyingKey, generate_signing_key)
from tests.vectors import VECTORS, load

KEYS = load("mutable-keys.json")
FIXED = KEYS["fixed_key"]
LEGACY = KEYS["legacy_key_e17"]
SDMF = load("mutable-sdmf-share.json")
PSS_SALT = bytes(range(32))


def test_fixed_key_loads_and_keeps_its_bytes() -> None:
    """The vector key loads, keeps its DER verbatim and yields the vector's public key."""
    der = bytes.fromhex(FIXED["private_key_pkcs8_der_hex"])
    key = SigningKey.from_der(der)
    assert key.der == der and len(der) == FIXED["private_key_pkcs8_der_length"]
    public = key.verifying_key()
    assert public.der.hex() == FIXED["public_key_spki_der_hex"]
    assert public.public_exponent == FIXED["public_exponent"] == 65537
    assert VerifyingKey.from_der(public.der) == public


def test_legacy_e17_key_is_accepted() -> None:
    """The pycryptopp-era key with e=17 loads from the PKCS#8 file and the JSON alike."""
    der = base64.b64decode((VECTORS / "keys" / "legacy_pycryptopp_rsa_2048_e17_pkcs8.b64")
                           .read_text())
    assert der.hex() == LEGACY["private_key_pkcs8_der_hex"]
    public = SigningKey.from_der(der).verifying_key()
    assert public.public_exponent == 17
    assert public.der.hex() == LEGACY["public_key_spki_der_hex"]
    assert len(public.der) == 292


def test_signature_with_fixed_salt_reproduces_the_vector() -> None:
    """Signing the SDMF prefix with the vectors' PSS salt gives the vector's signature."""
    key = SigningKey.from_der(bytes.fromhex(FIXED["private_key_pkcs8_der_hex"]))
    prefix = bytes.fromhex(SDMF["signed_prefix_hex"])
    signature = key.sign(prefix, salt=PSS_SALT)
    assert signature.hex() == SDMF["signature_hex"]
    key.verifying_key().verify(prefix, signature)


def test_random_salts_give_different_valid_signatures() -> None:
    """Two signatures over the same bytes differ, and both verify."""
    key = SigningKey.from_der(bytes.fromhex(LEGACY["private_key_pkcs8_der_hex"]))
    first, second = key.sign(b"message"), key.sign(b"message")
    assert first != second and len(first) == SIGNATURE_SIZE
    for signature in (first, second):
        assert key.verifying_key().is_valid(b"message", signature)


def test_openssl_signatures_are_what_pycryptodome_checks() -> None:
    """A signature OpenSSL makes (no salt given) verifies by pycryptodome's PSS, and a
    fixed-salt one by pycryptodome verifies here (by OpenSSL), for e=65537 and e=17."""
    from Crypto.Hash import SHA256
    from Crypto.Signature import pss
    for vector in (FIXED, LEGACY):
        der = bytes.fromhex(vector["private_key_pkcs8_der_hex"])
        key = SigningKey.from_der(der)
        public = RSA.import_key(key.verifying_key().der)
        signature = key.sign(b"prefix")
        pss.new(public, salt_bytes=32).verify(SHA256.new(b"prefix"), signature)
        key.verifying_key().verify(b"prefix", key.sign(b"prefix", salt=PSS_SALT))


def test_a_refused_signature_stays_refused() -> None:
    """Outcomes are remembered by their bytes: a bad signature checked twice fails twice,
    and the good one beside it still verifies."""
    key = SigningKey.from_der(bytes.fromhex(FIXED["private_key_pkcs8_der_hex"]))
    public = key.verifying_key()
    signature = key.sign(b"abc")
    forged = bytes([signature[0] ^ 1]) + signature[1:]
    for _ in range(2):
        assert not public.is_valid(b"abc", forged)
        assert public.is_valid(b"abc", signature)
        assert not public.is_valid(b"abd", signature)


def test_bad_signatures_are_refused() -> None:
    """A changed message, a flipped bit or a wrong length fails verification."""
    key = SigningKey.from_der(bytes.fromhex(FIXED["private_key_pkcs8_der_hex"]))
    public = key.verifying_key()
    signature = key.sign(b"abc", salt=PSS_SALT)
    with pytest.raises(BadSignature):
        public.verify(b"abd", signature)
    with pytest.raises(BadSignature):
        public.verify(b"abc", bytes([signature[0] ^ 1]) + signature[1:])
    with pytest.raises(BadSignature):
        public.verify(b"abc", signature[:-1])
    assert not public.is_valid(b"abc", b"")


def test_salt_must_be_32_bytes() -> None:
    """A fixed PSS salt of another length is a programming error."""
    key = SigningKey.from_der(bytes.fromhex(FIXED["private_key_pkcs8_der_hex"]))
    with pytest.raises(ValueError):
        key.sign(b"x", salt=b"short")


def test_other_key_sizes_are_refused() -> None:
    """A 1024-bit key is refused, as private and as public key, with a clear message."""
    small = RSA.generate(1024)
    with pytest.raises(BadRSAKey, match="2048 bits"):
        SigningKey.from_der(small.export_key("DER", pkcs=8))
    with pytest.raises(BadRSAKey, match="2048 bits"):
        VerifyingKey.from_der(small.publickey().export_key("DER"))


def test_public_and_private_are_not_confused() -> None:
    """A public key is not a signing key, nor a private key a verifying key."""
    with pytest.raises(BadRSAKey):
        SigningKey.from_der(bytes.fromhex(FIXED["public_key_spki_der_hex"]))
    with pytest.raises(BadRSAKey):
        VerifyingKey.from_der(bytes.fromhex(FIXED["private_key_pkcs8_der_hex"]))


def test_generation_uses_the_given_randomness() -> None:
    """A generated key is 2048-bit with e=65537, draws from randfunc, and signs."""
    counter = [0]

    def randfunc(count: int) -> bytes:
        out = b""
        while len(out) < count:
            counter[0] += 1
            out += hashlib.sha256(b"seed %d" % counter[0]).digest()
        return out[:count]

    key = generate_signing_key(randfunc)
    assert counter[0] > 0
    loaded = SigningKey.from_der(key.der)
    assert RSA.import_key(key.der).size_in_bits() == KEY_BITS
    assert loaded.verifying_key().public_exponent == 65537
    assert key.verifying_key().is_valid(b"m", loaded.sign(b"m"))


@given(st.binary(max_size=400))
@settings(deadline=None)
def test_garbage_is_not_a_key(garbage: bytes) -> None:
    """Random bytes are refused with BadRSAKey and nothing else."""
    for loader in (SigningKey.from_der, VerifyingKey.from_der):
        with pytest.raises(BadRSAKey):
            loader(garbage)


@given(st.sampled_from(["private_key_pkcs8_der_hex", "public_key_spki_der_hex"]), st.data())
@settings(deadline=None, max_examples=200)
def test_damaged_keys_load_or_fail_cleanly(which: str, data: st.DataObject) -> None:
    """A truncated or bit-flipped real key either loads or raises BadRSAKey."""
    der = bytearray.fromhex(FIXED[which])
    if data.draw(st.booleans()):
        der = der[:data.draw(st.integers(0, len(der) - 1))]
    else:
        der[data.draw(st.integers(0, len(der) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    loader = SigningKey.from_der if which.startswith("private") else VerifyingKey.from_der
    try:
        loader(bytes(der))
    except BadRSAKey:
        pass


def test_a_key_from_openssl_is_the_key_its_der_holds() -> None:
    """A key generated by OpenSSL (built from its numbers, unchecked) is the very key its
    DER bytes hold: same public key, and each verifies the other's signatures."""
    key = generate_signing_key()
    loaded = SigningKey.from_der(key.der)
    assert key.verifying_key().der == loaded.verifying_key().der
    assert loaded.verifying_key().is_valid(b"m", key.sign(b"m"))
    assert key.verifying_key().is_valid(b"n", loaded.sign(b"n"))
    assert key.verifying_key().public_exponent == 65537
