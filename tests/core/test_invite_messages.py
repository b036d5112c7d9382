"""The invite exchange's messages (``tahoe.invite.messages``, ``docs/formats/invites.md``)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tahoe.invite.errors import BadInviteCode, BadInviteMessage
from tahoe.invite.messages import (APP_ID, Invite, check_code, check_hello, encode_invite,
                                   hello, parse_invite)
from tests.vectors import load

FURL = "pb://" + "a" * 32 + "@tcp:127.0.0.1:4321/introducer"


def test_app_id_and_hellos_are_tahoe_120s() -> None:
    """The application id and both hellos are the bytes Tahoe 1.20 uses."""
    assert APP_ID == "tahoe-lafs.org/invite"
    assert json.loads(hello("server-v1")) == {"abilities": {"server-v1": {}}}
    assert json.loads(hello("client-v1")) == {"abilities": {"client-v1": {}}}


def test_settings_as_tahoe_120_sends_them_are_read() -> None:
    """1.20's inviter sends the numbers as text; they are read as integers."""
    message = json.dumps({"shares-needed": "2", "shares-total": "5", "shares-happy": "3",
                          "nickname": " friend ", "introducer": FURL}).encode()
    assert parse_invite(message) == Invite(FURL, "friend", 2, 3, 5)


def test_our_settings_carry_integers() -> None:
    """Ours sends JSON integers (1.20's joiner writes text values as b'2' into tahoe.cfg)."""
    sent = json.loads(encode_invite(Invite(FURL, "bob", 3, 7, 10)))
    assert sent == {"shares-needed": 3, "shares-happy": 7, "shares-total": 10,
                    "nickname": "bob", "introducer": FURL}


@given(needed=st.integers(1, 256), extra_happy=st.integers(0, 255),
       extra_total=st.integers(0, 255), nickname=st.text().filter(
           lambda t: "\n" not in t and "\r" not in t and t == t.strip()))
def test_settings_round_trip(needed: int, extra_happy: int, extra_total: int,
                             nickname: str) -> None:
    """Any valid settings parse back to themselves."""
    happy = min(needed + extra_happy, 256)
    total = min(happy + extra_total, 256)
    invite = Invite(FURL, nickname, needed, happy, total)
    assert parse_invite(encode_invite(invite)) == invite


@pytest.mark.parametrize("change, words", [
    ({"introducer": "http://example.org/"}, "not a FURL"),
    ({"introducer": None}, "no introducer"),
    ({"shares-needed": "two"}, "'shares-needed'"),
    ({"shares-happy": True}, "'shares-happy'"),
    ({"shares-total": "2"}, "1 <= needed <= happy <= total"),
    ({"shares-needed": 0}, "1 <= needed"),
    ({"nickname": "a\nb"}, "single line"),
])
def test_bad_settings_are_refused(change: dict[str, object], words: str) -> None:
    """Each wrong field is named in the error."""
    message = {"shares-needed": 2, "shares-happy": 3, "shares-total": 3, "nickname": "x",
               "introducer": FURL, **change}
    with pytest.raises(BadInviteMessage, match=words):
        parse_invite(json.dumps(message).encode())


@pytest.mark.parametrize("data", [b"\xff", b"[1]", b"{}", b'{"abilities": {"client-v1": {}}}'])
def test_hello_without_the_ability_is_refused(data: bytes) -> None:
    """An inviter accepts only a joiner's hello (and not garbage)."""
    with pytest.raises(BadInviteMessage):
        check_hello(data, "server-v1")
    check_hello(hello("server-v1"), "server-v1")


@pytest.mark.parametrize("code", ["3-guitarist-revenge", "12-a", "1-x-y-z"])
def test_codes_of_the_right_form_pass(code: str) -> None:
    """A number and words joined by dashes is a code."""
    assert check_code(code) == code


@pytest.mark.parametrize("code", ["", "guitarist-revenge", "3", "3-", "3 -a", "3-a b", "-3-a"])
def test_malformed_codes_are_refused(code: str) -> None:
    """Anything else is refused before any connection."""
    with pytest.raises(BadInviteCode):
        check_code(code)


def test_hellos_are_byte_for_byte_tahoe_120s() -> None:
    """Both hellos are the bytes Tahoe 1.20's inviter and joiner sent (captured vectors)."""
    captured = load("invite-messages.json")
    assert captured["app_id"] == APP_ID
    assert hello("server-v1") == captured["inviter_hello"].encode()
    assert hello("client-v1") == captured["joiner_hello"].encode()


def test_tahoe_120s_settings_are_read_and_ours_differ_only_in_number_type() -> None:
    """1.20's captured settings parse; ours have its keys in its order, numbers as integers,
    because its joiner writes text numbers as bytes literals (captured too)."""
    captured = load("invite-messages.json")
    invite = parse_invite(captured["inviter_settings"].encode())
    assert invite == Invite(captured["introducer"], "vector-nick", 2, 4, 5)
    theirs = json.loads(captured["inviter_settings"])
    ours = json.loads(encode_invite(invite))
    assert list(ours) == list(theirs)
    assert ours == {key: int(value) if key.startswith("shares-") else value
                    for key, value in theirs.items()}
    assert captured["joiner_tahoe_cfg_shares_for_text_numbers"][0] == "shares.needed = b'2'"
