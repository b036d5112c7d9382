"""NURLs: parse and format, key hashes, and the NURLs a server announces."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tahoe.util.errors import BadNURL
from tahoe.util.nurl import NURL, is_nurl, nurls_for_location, parse_nurl
from tests.vectors import load

#: The NURL in Tahoe 1.20's announcement of an HTTPS-capable server.
ANNOUNCED = json.loads(load("storage-announcement.json")["http_capable_variant"][
    "signed_message_utf8"])["anonymous-storage-NURLs"][0]
HASH = "Ncnn0Wz9JnYXFTCvOa5nD2m0IKsAAdoKdS57f4Wl8Ys"


def test_tahoes_nurl_round_trips() -> None:
    """The NURL Tahoe 1.20 announces parses into its parts and formats back to its text."""
    nurl = parse_nurl(ANNOUNCED)
    assert (nurl.spki_hash, nurl.host, nurl.port, nurl.swissnum, nurl.scheme) == \
        (HASH, "127.0.0.1", 40111, "2yxmpelgaujkbrdifkmdptpaaaz7c2b5", "pb")
    assert nurl.to_string() == ANNOUNCED
    assert is_nurl(ANNOUNCED) and not is_nurl(ANNOUNCED.replace("#v=1", ""))


@pytest.mark.parametrize("text", [
    "", "pb://x@h:1/s#v=1", ANNOUNCED.replace("#v=1", "#v=2"), ANNOUNCED.replace("pb://", "https://"),
    ANNOUNCED.replace("@127.0.0.1:40111", "@127.0.0.1"), ANNOUNCED.replace(":40111", ":0"),
    ANNOUNCED.replace(":40111", ":65536"), ANNOUNCED.split("/2yxm")[0] + "/#v=1",
    ANNOUNCED.replace("127.0.0.1", "bad host"), "pb://" + HASH + "@h:1/s é#v=1"])
def test_bad_nurls_refused(text: str) -> None:
    """Malformed NURLs raise BadNURL."""
    with pytest.raises(BadNURL):
        parse_nurl(text)


@given(st.binary(min_size=32, max_size=32), st.from_regex(r"\A[a-z0-9.-]{1,30}\Z"),
       st.integers(1, 65535), st.from_regex(r"\A[a-z2-7]{32}\Z"))
def test_round_trip(digest: bytes, host: str, port: int, swissnum: str) -> None:
    """Any NURL formats and parses back to itself."""
    import base64
    spki = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    nurl = NURL(spki, host, port, swissnum)
    assert parse_nurl(nurl.to_string()) == nurl


def test_one_nurl_per_tcp_hint() -> None:
    """A server makes a NURL per tcp hint (legacy host:port too), a pb+tor one per onion, and
    none for other kinds."""
    nurls = nurls_for_location(["tcp:127.0.0.1:1234", "example.org:99", "i2p:abc.i2p",
                                "tor:abcdefghij.onion:80", "tor:notonion:80", "junk"],
                               HASH, "swiss")
    assert [n.to_string() for n in nurls] == [
        f"pb://{HASH}@127.0.0.1:1234/swiss#v=1", f"pb://{HASH}@example.org:99/swiss#v=1",
        f"pb+tor://{HASH}@abcdefghij.onion:80/swiss#v=1"]


def test_key_hash_of_a_tahoe_certificate() -> None:
    """The SPKI hash of a Tahoe 1.20 node's certificate is the one its clients pin."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    from tahoe.util.nurl import spki_hash, spki_hash_of
    vectors = load("http-storage-tahoe120.json")
    certificate = x509.load_pem_x509_certificate(vectors["certificate_pem"].encode("ascii"))
    assert spki_hash_of(certificate) == vectors["spki_hash"]
    assert spki_hash(certificate.public_bytes(Encoding.DER)) == vectors["spki_hash"]
    with pytest.raises(BadNURL):
        spki_hash(b"not a certificate")
