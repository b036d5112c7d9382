"""The S3 gateway's accounts file (``tahoe.s3.accounts``)."""
from __future__ import annotations

import re

import pytest

from tahoe.s3.accounts import (AccountsError, format_account_line, new_access_key,
                               new_secret, parse_accounts)
from tahoe.s3.sigv4 import parse_request_auth
from tests.vectors import load

CAPS = load("dirnode-caps.json")
DIR = CAPS["sdmf"]["dir2_writecap"]
MDMF = CAPS["mdmf"]["dir2_mdmf_writecap"]
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def refusal(text: str) -> str:
    with pytest.raises(AccountsError) as info:
        parse_accounts(text)
    message = str(info.value)
    assert SECRET not in message and not re.search("[a-z2-7]{20}", message)
    return message


def test_accounts_file_with_comments_and_blanks() -> None:
    """Accounts are read in order; comments and blank lines are skipped."""
    text = (f"# S3 accounts\n\n  AKIDALICE {SECRET} {DIR}\n"
            f"bob.key_2-x {SECRET[::-1]}   {MDMF}  \n   # indented comment\n")
    alice, bob = parse_accounts(text)
    assert (alice.access_key, alice.secret, alice.root.to_string(), alice.line) == \
        ("AKIDALICE", SECRET, DIR, 3)
    assert bob.root.kind == "DIR2-MDMF" and bob.line == 4
    assert SECRET not in repr(alice) and "URI:" not in repr(alice)
    assert parse_accounts(text.splitlines()) == [alice, bob]
    assert parse_accounts("") == []


@pytest.mark.parametrize("line,message", [
    (f"AKID {SECRET}", "found 2 fields"),
    (f"AKID {SECRET} {DIR} extra", "found 4 fields"),
    (f"AK/ID {SECRET} {DIR}", "access key id"),
    (f"A {SECRET} {DIR}", "access key id"),
    (f"AKID short {DIR}", "secret access key"),
    (f"AKID s\u00e9cretsecret {DIR}", "secret access key"),
    (f"AKID {SECRET} {CAPS['sdmf']['dir2_readcap']}", "not a DIR2-RO cap"),
    (f"AKID {SECRET} {CAPS['mdmf']['dir2_mdmf_readcap']}", "write cap"),
    (f"AKID {SECRET} {CAPS['chk']['dir2_chk_cap']}", "not a DIR2-CHK cap"),
    (f"AKID {SECRET} {CAPS['lit']['dir2_lit_cap']}", "write cap"),
    (f"AKID {SECRET} {CAPS['sdmf']['dir2_verifycap']}", "write cap"),
    (f"AKID {SECRET} {CAPS['chk']['file_cap']}", "not a directory cap"),
    (f"AKID {SECRET} URI:DIR2:garbage", "not a directory cap"),
    (f"AKID {SECRET} notacap", "not a directory cap"),
])
def test_bad_lines_name_the_line_and_rule(line: str, message: str) -> None:
    """Each malformed line is refused with its line number, never echoing a secret or cap."""
    text = f"# header\n{line}\n"
    error = refusal(text)
    assert error.startswith("line 2:") and message in error


def test_duplicate_access_keys_are_refused() -> None:
    """One access key id on two lines is an error naming both lines."""
    error = refusal(f"AKID {SECRET} {DIR}\nOTHER {SECRET} {DIR}\nAKID {SECRET} {MDMF}\n")
    assert error == "line 3: the access key id AKID is already used on line 1"


def test_new_keys_from_random_bytes() -> None:
    """New ids and secrets come from given random bytes, parse back, and sign requests."""
    access_key = new_access_key(bytes(range(10)))
    secret = new_secret(bytes(range(30)))
    assert access_key.startswith("TL") and len(access_key) == 18 and len(secret) == 40
    assert new_access_key(bytes(range(10))) == access_key
    assert new_access_key(bytes(range(1, 11))) != access_key
    line = format_account_line(access_key, secret, DIR)
    assert line.endswith("\n") and parse_accounts(line)[0].secret == secret
    credential = f"{access_key}/20130524/us-east-1/s3/aws4_request"
    req = parse_request_auth("GET", "/", "", {
        "host": "h", "x-amz-date": "20130524T000000Z", "x-amz-content-sha256": "0" * 64,
        "authorization": f"AWS4-HMAC-SHA256 Credential={credential},SignedHeaders=host,"
                         f"Signature={'0' * 64}"})
    assert req.credential.access_key == access_key
    with pytest.raises(ValueError):
        new_access_key(b"short")
    with pytest.raises(ValueError):
        new_secret(b"short")
    with pytest.raises(AccountsError):
        format_account_line("bad/key", secret, DIR)
