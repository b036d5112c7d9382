"""Ed25519 node keys: RFC 8032 signatures and Tahoe's ``v0-`` text forms."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.crypto.ed25519 import (BadKeyString, BadSignature, SigningKey, VerifyingKey,
                                  is_curve_point, parse_private_key, parse_public_key,
                                  parse_server_id)
from tests.vectors import load

NODE_KEY = load("storage-announcement.json")["node_key"]
SEED = bytes.fromhex(NODE_KEY["ed25519_seed_hex"])

# RFC 8032 §7.1, TEST 1 and TEST 2: (secret key, public key, message, signature).
RFC8032 = [
    ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
     "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
    ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
     "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
]


@pytest.mark.parametrize("secret, public, message, signature", RFC8032)
def test_rfc8032_vectors(secret: str, public: str, message: str, signature: str) -> None:
    """Keys and signatures equal the RFC 8032 test vectors."""
    key = SigningKey(bytes.fromhex(secret))
    assert key.public_key.raw.hex() == public
    assert key.sign(bytes.fromhex(message)).hex() == signature
    key.public_key.verify(bytes.fromhex(message), bytes.fromhex(signature))


def test_node_key_files() -> None:
    """The vector seed gives Tahoe's node.privkey and node.pubkey contents exactly."""
    key = SigningKey(SEED)
    assert key.to_file_bytes().decode() == NODE_KEY["private_node_privkey_file_content"]
    assert key.public_key.to_file_bytes().decode() == NODE_KEY["node_pubkey_file_content"]
    assert key.public_key.raw.hex() == NODE_KEY["public_key_raw_hex"]


def test_server_id_and_short_name() -> None:
    """The server id is v0- and the base32 key; the short name its first 8 characters."""
    public = SigningKey(SEED).public_key
    assert public.server_id == NODE_KEY["server_id (announcement key_s / serverid)"]
    assert public.short_id == NODE_KEY["short_name"]


def test_parse_key_files() -> None:
    """The file contents parse back to the same keys, with or without the newline."""
    private_text = NODE_KEY["private_node_privkey_file_content"]
    public_text = NODE_KEY["node_pubkey_file_content"]
    assert parse_private_key(private_text) == SigningKey(SEED)
    assert parse_private_key(private_text.encode().rstrip()) == SigningKey(SEED)
    assert parse_public_key(public_text) == SigningKey(SEED).public_key
    server_id = NODE_KEY["server_id (announcement key_s / serverid)"]
    assert parse_server_id(server_id.encode()) == SigningKey(SEED).public_key


@pytest.mark.parametrize("text", [
    "", "priv-v0-", "pub-v0-pdshwqlno3kywckxx5zyhvk5iiv4itmoflzouoxwyhylcbfkftkq",
    "priv-v1-y3f6bm6zqmoa4jemuemsfbws76whhgq4gz566gftin5i5e67w64q",
    "priv-v0-Y3F6BM6ZQMOA4JEMUEMSFBWS76WHHGQ4GZ566GFTIN5I5E67W64Q",
    "priv-v0-y3f6bm6zqmoa4jemuemsfbws76whhgq4gz566gftin5i5e67w64",
    "priv-v0-y3f6bm6zqmoa4jemuemsfbws76whhgq4gz566gftin5i5e67w64r",
    "priv-v0-y3f6bm6zqmoa4jemuemsfbws76whhgq4gz566gftin5i5e67w64qaa",
    " priv-v0-y3f6bm6zqmoa4jemuemsfbws76whhgq4gz566gftin5i5e67w64q",
])
def test_malformed_private_keys(text: str) -> None:
    """Wrong prefix, case, length or trailing bits are refused with BadKeyString."""
    with pytest.raises(BadKeyString):
        parse_private_key(text)


@pytest.mark.parametrize("text", [
    "v0-", "pub-v0-pdshwqlno3kywckxx5zyhvk5iiv4itmoflzouoxwyhylcbfkftkq",
    "v0-pdshwqlno3kywckxx5zyhvk5iiv4itmoflzouoxwyhylcbfkftkq\n",
    "v0-PDSHWQLNO3KYWCKXX5ZYHVK5IIV4ITMOFLZOUOXWYHYLCBFKFTKQ",
    b"v0-\xff", 7,
])
def test_malformed_server_ids(text: object) -> None:
    """A server id must be exactly v0- and 52 canonical base32 characters."""
    with pytest.raises(BadKeyString):
        parse_server_id(text)  # type: ignore[arg-type]


def test_public_key_must_be_a_curve_point() -> None:
    """32 bytes that decode to no point on the curve are not a public key."""
    with pytest.raises(BadKeyString):
        VerifyingKey(b"\xff" * 32)
    with pytest.raises(BadKeyString):
        VerifyingKey(b"\x01" * 31)


#: The field prime of edwards25519.
P = 2**255 - 19
#: Encodings at the edges of RFC 8032's point decoding: y near 0, 1 and the prime, at
#: and above it (not canonical), each with the sign bit of x clear and set (x = 0 for
#: y = 1 and y = -1: a set sign bit is refused).
EDGE_ENCODINGS = [(y | sign << 255).to_bytes(32, "little") for sign in (0, 1)
                  for y in [*range(0, 20), *range(P - 20, 2**255)]]


def _pycryptodome_point(raw: bytes) -> bool:
    """Whether pycryptodome's RFC 8032 decoder (C) takes ``raw`` as a public key."""
    from Crypto.Signature import eddsa
    try:
        eddsa.import_public_key(raw)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("raw", EDGE_ENCODINGS, ids=lambda raw: raw.hex())
def test_curve_points_at_the_edges_as_pycryptodome(raw: bytes) -> None:
    """The point check refuses exactly what pycryptodome's decoder refuses (the library
    the keys were read with before) at the edges of the encoding."""
    assert is_curve_point(raw) == _pycryptodome_point(raw)


@given(raw=st.binary(min_size=32, max_size=32))
@settings(deadline=None, max_examples=500)
def test_curve_points_as_pycryptodome(raw: bytes) -> None:
    """About half of all 32-byte strings are points; the check agrees with pycryptodome
    on each, and VerifyingKey takes exactly those."""
    assert is_curve_point(raw) == _pycryptodome_point(raw)
    try:
        VerifyingKey(raw)
    except BadKeyString:
        assert not is_curve_point(raw)
    else:
        assert is_curve_point(raw)


@given(seed=st.binary(min_size=32, max_size=32), message=st.binary(max_size=300))
@settings(deadline=None, max_examples=50)
def test_signatures_as_pycryptodome(seed: bytes, message: bytes) -> None:
    """Keys and signatures are pycryptodome's, byte for byte, and each verifies the other's."""
    from Crypto.PublicKey import ECC
    from Crypto.Signature import eddsa
    theirs = ECC.construct(curve="Ed25519", seed=seed)
    ours = SigningKey(seed)
    assert ours.public_key.raw == theirs.public_key().export_key(format="raw")
    signature = ours.sign(message)
    assert signature == eddsa.new(theirs, "rfc8032").sign(message)
    eddsa.new(theirs.public_key(), "rfc8032").verify(message, signature)


def test_wrong_seed_length() -> None:
    """A seed must be 32 bytes."""
    with pytest.raises(BadKeyString):
        SigningKey(bytes(31))


def test_repr_hides_the_seed() -> None:
    """A signing key's repr shows its public key, not its seed."""
    assert SEED.hex() not in repr(SigningKey(SEED)) and repr(SEED) not in repr(SigningKey(SEED))


@given(seed=st.binary(min_size=32, max_size=32), message=st.binary(max_size=300))
@settings(deadline=None)
def test_sign_verify_round_trip(seed: bytes, message: bytes) -> None:
    """A signature verifies under the signer's public key, also after a text round trip."""
    key = SigningKey(seed)
    signature = key.sign(message)
    assert len(signature) == 64
    parse_server_id(key.public_key.server_id).verify(message, signature)
    assert parse_private_key(key.to_file_bytes()) == key


@given(seed=st.binary(min_size=32, max_size=32), message=st.binary(min_size=1, max_size=300),
       data=st.data())
@settings(deadline=None)
def test_changed_message_fails(seed: bytes, message: bytes, data: st.DataObject) -> None:
    """Flipping any bit of the message makes the signature fail."""
    key = SigningKey(seed)
    signature = key.sign(message)
    position = data.draw(st.integers(0, len(message) - 1))
    bit = data.draw(st.integers(0, 7))
    changed = bytearray(message)
    changed[position] ^= 1 << bit
    with pytest.raises(BadSignature):
        key.public_key.verify(bytes(changed), signature)
    assert not key.public_key.is_valid_signature(bytes(changed), signature)


@given(garbage=st.one_of(st.text(max_size=80), st.binary(max_size=80)))
@settings(deadline=None)
def test_garbage_key_strings(garbage: str | bytes) -> None:
    """Random text never crashes the key parsers with anything but BadKeyString."""
    for parser in (parse_private_key, parse_public_key, parse_server_id):
        try:
            parser(garbage)
        except BadKeyString:
            pass
