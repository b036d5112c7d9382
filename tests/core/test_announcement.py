"""Storage announcements are built, signed, verified and kept as Tahoe-LAFS 1.20 does."""
from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.crypto.ed25519 import SigningKey
from tahoe.introducer import errors
from tahoe.introducer.announcement import (INTRODUCER_V2, AnnouncementTable, Verdict,
                                           VerifiedAnnouncement, announced_permutation_seed,
                                           build_announcement, check_introducer_version,
                                           encode_announcement, introducer_version, judge,
                                           permutation_seed, sign_announcement,
                                           storage_announcement, subscriber_info,
                                           tubid_permutation_seed, verify_announcement)
from tahoe.util import base32
from tahoe.util.errors import BadFURL
from tests.vectors import load

VECTOR = load("storage-announcement.json")
RING = load("storage-permuted-ring.json")
INPUTS = VECTOR["announcement_inputs"]
KEY = SigningKey(bytes.fromhex(VECTOR["node_key"]["ed25519_seed_hex"]))
FURL_TEXT = INPUTS["storage_specific_keys"]["anonymous-storage-FURL"]
SERVER_ID = VECTOR["key_field"]


def vector_announcement(**changes: Any) -> dict[str, Any]:
    """The vector's announcement built from its inputs, with keyword overrides."""
    arguments: dict[str, Any] = dict(
        nickname=INPUTS["nickname"], furl=FURL_TEXT,
        permutation_seed_base32=INPUTS["storage_specific_keys"]["permutation-seed-base32"],
        seqnum=INPUTS["seqnum"], nonce=base32.a2b(INPUTS["nonce"]),
        my_version=INPUTS["my_version"], oldest_supported=INPUTS["oldest_supported"])
    arguments.update(changes)
    return storage_announcement(**arguments)


def signed(ann: dict[str, Any], key: SigningKey = KEY) -> VerifiedAnnouncement:
    """Sign and verify ``ann``."""
    return verify_announcement(sign_announcement(ann, key))


def test_announcement_dict_in_tahoe_order() -> None:
    """The built announcement equals the vector's dict, keys in the same order."""
    ann = vector_announcement()
    expected = VECTOR["announcement_dict_as_decoded"]
    assert ann == expected
    assert list(ann) == list(expected)


def test_signed_message_bytes() -> None:
    """The signed message is the vector's JSON bytes exactly."""
    message = encode_announcement(vector_announcement())
    assert message == VECTOR["signed_message_utf8"].encode("utf-8")
    assert message.hex() == VECTOR["signed_message_hex"]


def test_signed_tuple() -> None:
    """Signing gives the vector's 3-tuple of bytes: message, v0- signature, v0- key."""
    ann_t = sign_announcement(vector_announcement(), KEY)
    assert isinstance(ann_t, tuple) and all(isinstance(part, bytes) for part in ann_t)
    message, signature, key = ann_t
    assert message == VECTOR["signed_message_utf8"].encode()
    assert signature.decode() == VECTOR["signature_field"]
    assert base32.a2b(signature[3:]).hex() == VECTOR["signature_raw_hex"]
    assert key.decode() == VECTOR["key_field"] == KEY.public_key.server_id
    publish = VECTOR["foolscap_publish_v2_announcement_argument"]
    assert [signature.decode(), key.decode()] == publish[1:]


def test_verify_vector() -> None:
    """The vector's tuple verifies to its dict, server id and service."""
    ann_t = (VECTOR["signed_message_utf8"].encode(), VECTOR["signature_field"].encode(),
             VECTOR["key_field"].encode())
    verified = verify_announcement(ann_t)
    assert verified.announcement == VECTOR["announcement_dict_as_decoded"]
    assert (verified.server_id, verified.service_name, verified.seqnum, verified.nickname) == \
        (SERVER_ID, "storage", 7, "storage-1")
    assert verified.as_tuple() == ann_t


def test_http_capable_variant_verifies() -> None:
    """The HTTP-capable variant (with anonymous-storage-NURLs) verifies as received."""
    variant = VECTOR["http_capable_variant"]
    verified = verify_announcement((variant["signed_message_utf8"].encode(),
                                    variant["signature_field"].encode(),
                                    variant["key_field"].encode()))
    assert verified.announcement["anonymous-storage-NURLs"][0].startswith("pb://")
    assert verified.seqnum == 8


def test_https_announcement_is_tahoes() -> None:
    """An announcement with NURLs is built with Tahoe's fields in Tahoe's order: the signed
    message of the HTTP-capable variant, byte for byte (the seed signs it the same way too)."""
    variant = VECTOR["http_capable_variant"]
    theirs = json.loads(variant["signed_message_utf8"])
    ours = storage_announcement(
        nickname=theirs["nickname"], furl=theirs["anonymous-storage-FURL"],
        permutation_seed_base32=theirs["permutation-seed-base32"], seqnum=theirs["seqnum"],
        nonce=base32.a2b(theirs["nonce"]), nurls=theirs["anonymous-storage-NURLs"])
    assert json.dumps(ours).encode() == variant["signed_message_utf8"].encode()
    assert "anonymous-storage-NURLs" not in storage_announcement(
        nickname="n", furl=theirs["anonymous-storage-FURL"],
        permutation_seed_base32=theirs["permutation-seed-base32"], seqnum=1, nonce=bytes(32))


def test_subscriber_info() -> None:
    """subscriber_info has the vector's fields, with bytes keys and str values."""
    info = subscriber_info(INPUTS["nickname"])
    expected = VECTOR["subscriber_info_sent_with_subscribe_v2"]
    assert list(info) == [name.encode() for name in expected]
    assert {name.decode(): value for name, value in info.items()} == expected
    assert all(isinstance(v, str) for k, v in info.items() if k != b"version"
               and k != b"app-versions")


def test_introducer_version() -> None:
    """get_version has only bytes keys and the v2 key, and passes the client's check."""
    version = introducer_version()
    assert version == {INTRODUCER_V2: {}, b"application-version": b"tahoe-lafs/1.20.0"}
    check_introducer_version(version)
    for bad in ({}, {"http://allmydata.org/tahoe/protocols/introducer/v2": {}},
                {INTRODUCER_V2: {}, "application-version": b"x"}, None):
        with pytest.raises(errors.IncompatibleIntroducer):
            check_introducer_version(bad)


def test_permutation_seed_forms() -> None:
    """The announced seed is 84 characters and decodes to the key's 52 base32 characters."""
    node = VECTOR["node_key"]
    announced = announced_permutation_seed(KEY.public_key)
    assert announced == node["permutation_seed_base32_announced"]
    assert len(announced) == 84
    seed = permutation_seed({"permutation-seed-base32": announced}, SERVER_ID)
    assert seed.decode() == node["permutation_seed_bytes_used_in_hash"].split()[0]


@pytest.mark.parametrize("server", RING["servers"], ids=lambda s: s["nickname"])
def test_permutation_seeds_of_ring_servers(server: dict) -> None:
    """Announced values and client seed bytes match the ring vector in all three cases."""
    key = SigningKey(bytes.fromhex(server["ed25519_seed_hex"]))
    assert key.public_key.server_id == server["server_id"]
    announced = server["announced_permutation_seed_base32"]
    if server["kind"].startswith("normal"):
        assert announced_permutation_seed(key.public_key) == announced
    elif server["kind"].startswith("tubid"):
        assert tubid_permutation_seed(server["tubid_base32"]) == announced
    ann = {} if announced is None else {"permutation-seed-base32": announced}
    assert permutation_seed(ann, server["server_id"]).hex() == server["permutation_seed_bytes_hex"]


def test_permutation_seed_fallbacks() -> None:
    """Without the field: raw key bytes for a v0- id, else SHA-256 of the id; bad base32 raises."""
    assert permutation_seed({}, SERVER_ID) == KEY.public_key.raw
    assert permutation_seed({}, "some-other-id") == hashlib.sha256(b"some-other-id").digest()
    assert permutation_seed({"permutation-seed-base32": ""}, SERVER_ID) == b""
    for bad in ("ABC", "a", 12):
        with pytest.raises(errors.BadPermutationSeed):
            permutation_seed({"permutation-seed-base32": bad}, SERVER_ID)


def test_storage_announcement_needs_a_usable_furl() -> None:
    """A storage announcement refuses a FURL a Tahoe client would not use."""
    with pytest.raises(BadFURL):
        vector_announcement(furl="http://example.org/")
    with pytest.raises(ValueError):
        vector_announcement(seqnum=-1)
    with pytest.raises(ValueError):
        vector_announcement(nonce=b"short")


def test_json_encoding_rules() -> None:
    """Non-ASCII is escaped, bytes values are decoded and sets become sorted lists."""
    ann = build_announcement("x", {"b": b"bytes", "s": {"b", "a"}, "u": "\u00e9"},
                             nickname="n\u00e9", seqnum=1, nonce=bytes(32))
    message = encode_announcement(ann)
    assert message.isascii()
    assert b'"nickname": "n\\u00e9"' in message
    assert b'"b": "bytes", "s": ["a", "b"]' in message
    assert json.loads(message)["u"] == "\u00e9"


def test_unsigned_and_non_v0_raise() -> None:
    """A missing signature or key, or one without v0-, raises UnsignedAnnouncement."""
    message, signature, key = sign_announcement(vector_announcement(), KEY)
    for ann_t in ((message, None, None), (message, b"", key), (message, signature, None),
                  (message, b"v1-" + signature[3:], key), (message, signature, b"v1-" + key[3:])):
        with pytest.raises(errors.UnsignedAnnouncement):
            verify_announcement(ann_t)


def test_bad_signature_and_key() -> None:
    """Another key's signature, a damaged signature or a bad key are refused specifically."""
    message, signature, key = sign_announcement(vector_announcement(), KEY)
    other = SigningKey(bytes(32)).public_key.server_id.encode()
    with pytest.raises(errors.InvalidSignature):
        verify_announcement((message, signature, other))
    with pytest.raises(errors.InvalidSignature):
        verify_announcement((message, signature[:-2], key))
    with pytest.raises(errors.InvalidSignature):
        verify_announcement((message, b"v0-!!", key))
    with pytest.raises(errors.BadAnnouncementKey):
        verify_announcement((message, signature, key[:-1]))


@pytest.mark.parametrize("message, error", [
    (b"not json", errors.BadAnnouncementBody),
    (b"\xff\xfe", errors.BadAnnouncementBody),
    (b"[1, 2]", errors.BadAnnouncementBody),
    (b'"storage"', errors.BadAnnouncementBody),
    (b"{}", errors.MissingServiceName),
    (b'{"service-name": 3}', errors.MissingServiceName),
    (b"[" * 100000 + b"]" * 100000, errors.BadAnnouncementBody),
])
def test_signed_garbage_bodies(message: bytes, error: type) -> None:
    """Correctly signed messages that are not JSON objects with a service-name are refused."""
    ann_t = (message, b"v0-" + base32.b2a_bytes(KEY.sign(message)),
             KEY.public_key.server_id.encode())
    with pytest.raises(error):
        verify_announcement(ann_t)


@pytest.mark.parametrize("ann_t", [None, b"abc", (), (b"m", b"s"), [b"a", b"b", b"c", b"d"],
                                   ("m", b"v0-a", b"v0-b"), (b"m", "v0-a", b"v0-b"), {1, 2, 3}])
def test_malformed_tuples(ann_t: object) -> None:
    """Anything but three values with a bytes message is MalformedAnnouncement."""
    with pytest.raises(errors.MalformedAnnouncement):
        verify_announcement(ann_t)


def test_error_hierarchy() -> None:
    """Every refusal is a BadAnnouncement, an IntroducerError and a ValueError."""
    for cls in (errors.MalformedAnnouncement, errors.UnsignedAnnouncement,
                errors.BadAnnouncementKey, errors.InvalidSignature, errors.BadAnnouncementBody,
                errors.MissingServiceName, errors.BadPermutationSeed):
        assert issubclass(cls, errors.BadAnnouncement)
    assert issubclass(errors.BadAnnouncement, errors.IntroducerError)
    assert issubclass(errors.IntroducerError, ValueError)


# ---------------------------------------------------------------- acceptance rules

def test_table_accepts_new_and_ignores_identical() -> None:
    """A first announcement is stored; the same one again changes nothing."""
    table = AnnouncementTable()
    first = signed(vector_announcement())
    assert table.offer(first) is True
    assert table.offer(signed(vector_announcement())) is False
    assert table.consider(first) is Verdict.IDENTICAL
    assert table.get("storage", SERVER_ID) == first
    assert len(table) == 1 and list(table) == [first]


def test_table_seqnum_must_increase() -> None:
    """A stored seqnum is replaced only by a strictly greater int seqnum."""
    table = AnnouncementTable()
    table.offer(signed(vector_announcement(seqnum=7)))
    assert table.consider(signed(vector_announcement(seqnum=7, nickname="x"))) is Verdict.STALE
    assert table.consider(signed(vector_announcement(seqnum=6))) is Verdict.STALE
    newer = signed(vector_announcement(seqnum=8, nonce=bytes(32)))
    assert table.consider(newer) is Verdict.REPLACED
    assert table.get("storage", SERVER_ID) == newer
    unsequenced = dict(vector_announcement(seqnum=9))
    del unsequenced["seqnum"]
    assert table.offer(signed(unsequenced)) is False
    boolean = dict(vector_announcement(seqnum=9), seqnum=True)
    assert table.offer(signed(boolean)) is False


def test_table_without_seqnum_accepts_any_change() -> None:
    """When the stored announcement has no seqnum, any different one replaces it."""
    table = AnnouncementTable()
    ann = dict(vector_announcement())
    del ann["seqnum"]
    table.offer(signed(ann))
    assert table.offer(signed(dict(ann, nickname="renamed"))) is True
    assert table.get("storage", SERVER_ID).nickname == "renamed"  # type: ignore[union-attr]


def test_table_is_keyed_by_service_and_server() -> None:
    """Different servers, or different services of one server, are kept apart."""
    table = AnnouncementTable()
    other_key = SigningKey(bytes(32))
    a = signed(vector_announcement())
    b = signed(vector_announcement(), other_key)
    c = signed(build_announcement("other", {}, nickname="n", seqnum=1, nonce=bytes(32)))
    assert [table.offer(x) for x in (a, b, c)] == [True, True, True]
    assert table.for_service("storage") == [a, b]
    assert table.for_service("other") == [c]
    assert judge(None, a) is Verdict.NEW


@given(seqnums=st.lists(st.integers(0, 20), min_size=1, max_size=12))
@settings(deadline=None)
def test_table_keeps_the_highest_seqnum(seqnums: list[int]) -> None:
    """Whatever the order of arrival, the table ends holding the highest seqnum."""
    table = AnnouncementTable()
    for n in seqnums:
        table.offer(signed(vector_announcement(seqnum=n)))
    stored = table.get("storage", SERVER_ID)
    assert stored is not None and stored.seqnum == max(seqnums)


# ---------------------------------------------------------------- properties

@given(nickname=st.text(max_size=30), seqnum=st.integers(0, 2 ** 40),
       nonce=st.binary(min_size=32, max_size=32), seed=st.binary(min_size=32, max_size=32))
@settings(deadline=None)
def test_sign_verify_round_trip(nickname: str, seqnum: int, nonce: bytes, seed: bytes) -> None:
    """Any announcement signs and verifies back to itself, keyed by its signer."""
    key = SigningKey(seed)
    ann = vector_announcement(nickname=nickname, seqnum=seqnum, nonce=nonce,
                              permutation_seed_base32=announced_permutation_seed(key.public_key))
    verified = signed(ann, key)
    assert verified.announcement == ann
    assert verified.server_id == key.public_key.server_id
    assert permutation_seed(verified.announcement, verified.server_id) == \
        base32.b2a_bytes(key.public_key.raw)


@given(data=st.data())
@settings(deadline=None)
def test_changed_byte_fails(data: st.DataObject) -> None:
    """Changing any byte of the signed message makes verification fail."""
    message, signature, key = sign_announcement(vector_announcement(), KEY)
    position = data.draw(st.integers(0, len(message) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != message[position]))
    changed = message[:position] + bytes([value]) + message[position + 1:]
    with pytest.raises(errors.InvalidSignature):
        verify_announcement((changed, signature, key))


GOOD = sign_announcement(vector_announcement(), KEY)
parts = st.one_of(st.none(), st.binary(max_size=120), st.text(max_size=20), st.integers(),
                  st.binary(max_size=110).map(lambda b: b"v0-" + b),
                  st.sampled_from(GOOD))


@given(ann_t=st.one_of(st.tuples(parts, parts, parts), st.lists(parts, max_size=4), parts))
@settings(deadline=None)
def test_garbage_never_crashes_the_verifier(ann_t: object) -> None:
    """Random values raise only our BadAnnouncement errors."""
    try:
        verify_announcement(ann_t)
    except errors.BadAnnouncement:
        pass


@given(body=st.one_of(st.binary(max_size=200), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=12), children, max_size=3)).map(
        lambda v: json.dumps(v).encode())))
@settings(deadline=None)
def test_signed_garbage_never_crashes_the_verifier(body: bytes) -> None:
    """Validly signed random bodies raise only our errors, or verify into a dict with a service name."""
    ann_t = (body, b"v0-" + base32.b2a_bytes(KEY.sign(body)), KEY.public_key.server_id.encode())
    try:
        verified = verify_announcement(ann_t)
    except errors.BadAnnouncementBody:
        return
    assert isinstance(verified.service_name, str)
