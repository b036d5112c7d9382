"""The ``[s3]`` section of ``tahoe.cfg``: defaults, values, and clear errors."""
from __future__ import annotations

import pytest

from tahoe.node.config import S3Config, parse_age, parse_config
from tahoe.node.errors import BadValue, UnknownOption


def test_defaults() -> None:
    """Without the section the gateway is off, with the documented defaults."""
    assert parse_config("").s3 == S3Config()
    s3 = parse_config("[s3]\nenabled = true\n").s3
    assert s3.enabled and s3.port == "tcp:3458:interface=127.0.0.1"
    assert s3.accounts_file == "private/s3-accounts" and s3.region == "us-east-1"
    assert s3.multipart_max_age == 7 * 24 * 3600


def test_values() -> None:
    """Every key is read; a bare port number becomes a TCP endpoint."""
    s3 = parse_config("[s3]\nenabled = yes\nport = 9000\naccounts.file = s3keys\n"
                      "region = eu-west-3\nmultipart.max_age = 12 hours\n").s3
    assert s3 == S3Config(True, "tcp:9000", "s3keys", "eu-west-3", 12 * 3600)


@pytest.mark.parametrize("text, seconds", [("90", 90), ("90s", 90), ("30 min", 1800),
                                           ("2 hours", 7200), ("7 days", 604800),
                                           ("1mo", 31 * 86400)])
def test_ages(text: str, seconds: int) -> None:
    """Ages in seconds, minutes, hours, days, months."""
    assert parse_age(text) == seconds


@pytest.mark.parametrize("line, message", [
    ("region = US_EAST", r"\[s3\]region"), ("multipart.max_age = soon", r"max_age"),
    ("multipart.max_age = 0", r"more than zero"), ("enabled = maybe", r"\[s3\]enabled"),
    ("port = tcp:99999", r"\[s3\]port")])
def test_bad_values(line: str, message: str) -> None:
    """A wrong value names the section and key."""
    with pytest.raises(BadValue, match=message):
        parse_config(f"[s3]\n{line}\n")


def test_unknown_key_and_introducer() -> None:
    """Unknown keys are refused; an introducer knows no ``[s3]``."""
    with pytest.raises(UnknownOption):
        parse_config("[s3]\naccess_key = x\n")
    with pytest.raises(Exception, match="s3"):
        parse_config("[s3]\nenabled = true\n", node_type="introducer")
