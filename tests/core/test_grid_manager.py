"""Grid Manager formats against the vectors captured from Tahoe-LAFS 1.20."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from tahoe.crypto.ed25519 import SigningKey, parse_private_key, parse_public_key
from tahoe.grid_manager.certificate import (ANNOUNCEMENT_KEY, BadCertificate, Finding,
                                            certificate_bytes, certified_until,
                                            check_certificates, expiry_after,
                                            format_certificate_file, parse_certificate_body,
                                            parse_certificate_file, sign_certificate)
from tahoe.grid_manager.config import format_config, parse_config
from tahoe.grid_manager.errors import BadGridManagerConfig
from tests.vectors import VECTORS, load

CONFIG_TEXT = (VECTORS / "grid-manager-config.json").read_text()
CERT_TEXT = (VECTORS / "grid-manager-certificate.json").read_text()
V = load("grid-manager-vectors.json")
MANAGER = parse_private_key(V["private_key"]).public_key
STORAGE0 = V["servers"]["storage0"]["public"]
STORAGE1 = V["servers"]["storage1"]["public"]


def test_config_round_trips_byte_for_byte() -> None:
    """Tahoe's config.json parses and formats back to the same bytes."""
    config = parse_config(CONFIG_TEXT)
    assert list(config.names()) == ["storage0", "storage1"]
    assert format_config(config) == CONFIG_TEXT
    assert config.public_identity() + "\n" == V["public_identity_stdout"]


def test_config_with_server_matches_tahoe_stdin_add() -> None:
    """Adding a server gives what Tahoe's ``--config - add`` printed (config, blank line)."""
    config = parse_config(CONFIG_TEXT).with_server("storage2", parse_public_key(STORAGE0))
    assert format_config(config) + "\n" == V["stdin_add_stdout"]


def test_fresh_config_has_no_servers_key() -> None:
    """A new manager's config has only the version and the key, as 1.20's ``create``."""
    text = format_config(parse_config(CONFIG_TEXT).without_server("storage0")
                         .without_server("storage1"))
    assert json.loads(text) == {"grid_manager_config_version": 0,
                                "private_key": V["private_key"]}


@pytest.mark.parametrize("text, words", [
    ("[]", "not a JSON object"),
    ("{", "not JSON"),
    ('{"private_key": "x"}', "unknown version"),
    ('{"grid_manager_config_version": 1, "private_key": "x"}', "unknown version"),
    ('{"grid_manager_config_version": 0}', "'private_key' required"),
    ('{"grid_manager_config_version": 0, "private_key": "priv-v0-abc"}', "Invalid Grid Manager"),
    ('{"grid_manager_config_version": 0, "private_key": "%s", "storage_servers": {"a": {}}}'
     % V["private_key"], "No 'public_key'"),
    ('{"grid_manager_config_version": 0, "private_key": "%s",'
     ' "storage_servers": {"a/b": {"public_key": "%s"}}}' % (V["private_key"], STORAGE0),
     "invalid storage-server name"),
])
def test_bad_configs_are_refused(text: str, words: str) -> None:
    """A malformed config.json gets a message naming the problem."""
    with pytest.raises(BadGridManagerConfig, match=words):
        parse_config(text)


def test_tahoe_certificate_verifies() -> None:
    """Our verifier accepts the certificate 1.20's ``grid-manager sign`` wrote."""
    signed = parse_certificate_file(CERT_TEXT)
    MANAGER.verify(signed.certificate, signed.signature)
    body = parse_certificate_body(signed.certificate)
    assert body.public_key == STORAGE0
    findings = check_certificates({"gm": MANAGER}, [json.loads(CERT_TEXT)], STORAGE0)
    assert findings == (Finding("signed", "gm", body.expires),)
    assert certified_until(findings, body.expires - timedelta(seconds=1)) == body.expires
    assert certified_until(findings, body.expires) is None
    assert format_certificate_file(signed) + "\n" == V["sign_stdout"]


@pytest.mark.parametrize("case", V["fixed_certificates"], ids=lambda c: c["now"])
def test_our_signer_produces_tahoe_bytes(case: dict) -> None:
    """Signing the same server at the same moment gives 1.20's certificate and signature."""
    now = datetime.fromisoformat(case["now"])
    key = parse_private_key(V["private_key"])
    signed = sign_certificate(key, parse_public_key(STORAGE1),
                              expiry_after(now, case["expiry_days"]))
    assert signed.certificate.decode() == case["certificate"]
    assert format_certificate_file(signed) == case["file"]


def test_expired_certificate_gives_no_certification() -> None:
    """1.20's one-day certificate from 2020 is signed, and expired today."""
    expired = json.loads(V["fixed_certificates"][1]["file"])
    findings = check_certificates({"gm": MANAGER}, [expired], STORAGE1)
    assert [f.status for f in findings] == ["signed"]
    assert certified_until(findings, datetime(2020, 1, 1, 12, tzinfo=timezone.utc)) is not None
    assert certified_until(findings, datetime(2024, 1, 1, tzinfo=timezone.utc)) is None


def test_forged_other_server_and_malformed() -> None:
    """A certificate signed by another key, one for another server, and junk are refused."""
    good = json.loads(CERT_TEXT)
    other_manager = SigningKey(b"\x01" * 32)
    forged = sign_certificate(other_manager, parse_public_key(STORAGE0),
                              datetime(2099, 1, 1, tzinfo=timezone.utc)).to_json_value()
    tampered = dict(good, certificate=good["certificate"].replace("2027", "2099"))
    findings = check_certificates({"gm": MANAGER},
                                  [forged, tampered, good, {"certificate": "x"}, 7], STORAGE1)
    assert [f.status for f in findings] == ["forged", "forged", "other-server", "malformed",
                                            "malformed"]
    assert certified_until(findings, datetime(2000, 1, 1, tzinfo=timezone.utc)) is None
    assert check_certificates({"gm": MANAGER}, {"a": 1}, STORAGE0)[0].status == "malformed"
    assert check_certificates({"gm": MANAGER}, None, STORAGE0) == ()
    # the forger's own key accepts it: the signature check is real
    assert check_certificates({"x": other_manager.public_key}, [forged],
                              STORAGE0)[0].status == "signed"


def test_certificate_body_checks() -> None:
    """Bodies without a zone, of another version or with a bad key are malformed."""
    for raw in (b'{"expires":"2030-01-01T00:00:00","public_key":"%s","version":1}' % STORAGE0.encode(),
                b'{"expires":"2030-01-01T00:00:00+00:00","public_key":"%s","version":2}' % STORAGE0.encode(),
                b'{"expires":"2030-01-01T00:00:00+00:00","public_key":"pub-v0-aa","version":1}',
                b'[1]', b'\xff'):
        with pytest.raises(BadCertificate):
            parse_certificate_body(raw)
    with pytest.raises(ValueError):
        certificate_bytes(parse_public_key(STORAGE0), datetime(2030, 1, 1))


def test_announcement_key() -> None:
    """The announcement key is the one 1.20's storage servers use."""
    assert ANNOUNCEMENT_KEY == "grid-manager-certificates"


def test_tahoe_announcement_carries_certificates_we_accept() -> None:
    """1.20's storage announcement lists its certificate under grid-manager-certificates;
    our check accepts it for the announcing server, and our announcement has the same
    keys and the same value for it."""
    from tahoe.introducer.announcement import storage_announcement
    captured = V["announcement"]
    ann = captured["ann"]
    findings = check_certificates({"gm": MANAGER}, ann[ANNOUNCEMENT_KEY],
                                  "pub-" + captured["key_s"])
    assert [f.status for f in findings] == ["signed"]
    assert ann[ANNOUNCEMENT_KEY] == [json.loads(CERT_TEXT)]
    ours = storage_announcement(nickname=ann["nickname"], furl=ann["anonymous-storage-FURL"],
                                permutation_seed_base32=ann["permutation-seed-base32"],
                                seqnum=1, nonce=b"n" * 32, nurls=ann["anonymous-storage-NURLs"],
                                grid_manager_certificates=[json.loads(CERT_TEXT)])
    assert sorted(ours) == sorted(ann)
    assert ours[ANNOUNCEMENT_KEY] == ann[ANNOUNCEMENT_KEY]
    without = storage_announcement(nickname="n", furl=ann["anonymous-storage-FURL"],
                                   permutation_seed_base32="aaaa", seqnum=1, nonce=b"n" * 32)
    assert ANNOUNCEMENT_KEY not in without
