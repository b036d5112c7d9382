"""The SFTP frontend's pure parts: the accounts file and paths below an account's root."""
from __future__ import annotations

import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tahoe.frontends.accounts import AccountsError, parse_accounts
from tahoe.frontends.sftp_paths import (BadPath, OutsideRoot, join_path, permissions,
                                        split_path)

DIR = "URI:DIR2:" + "a" * 26 + ":" + "b" * 51 + "a"
RO = "URI:DIR2-RO:" + "c" * 25 + "a" + ":" + "b" * 51 + "a"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5c"


def test_accounts_with_keys_and_passwords() -> None:
    """Key lines (with a comment) and password lines, comments and blank lines; one name
    may have several lines for the same root."""
    accounts = parse_accounts(["# accounts", "", f"alice {KEY} alice@laptop {DIR}",
                               f"alice {KEY.replace('5c', '6d')} {DIR}",
                               f"bob sekrit {RO}", f"  alice pw {DIR}  "])
    alice = accounts["alice"]
    assert alice.public_keys == (f"{KEY} alice@laptop", KEY.replace("5c", "6d"))
    assert alice.passwords == ("pw",) and alice.root.to_string() == DIR
    assert accounts["bob"].root.is_readonly and accounts["bob"].passwords == ("sekrit",)


@pytest.mark.parametrize("line, message", [
    (f"alice {DIR}", "expected NAME"),
    ("alice sekrit URI:CHK:aaaa", "is not a cap|directory"),
    (f"alice two words {DIR}", "three fields"),
    ("alice sekrit URI:DIR2-Verifier:" + "a" * 26 + ":" + "b" * 51 + "a", "read or write cap"),
])
def test_bad_account_lines(line: str, message: str) -> None:
    """A malformed line is refused with its line number."""
    with pytest.raises(AccountsError, match=f"line 2: .*({message})"):
        parse_accounts(["# first", line])


def test_one_name_two_roots_is_refused() -> None:
    """An account cannot have two roots."""
    with pytest.raises(AccountsError, match="two different root"):
        parse_accounts([f"alice pw {DIR}", f"alice {KEY} {RO}"])


def test_paths_below_the_root() -> None:
    """Paths are absolute or relative to /, '.' and '..' are resolved, and leaving the
    root is an error."""
    assert split_path(b"/") == [] and split_path(b"") == [] and split_path(b".") == []
    assert split_path(b"a/./b//c/../d") == ["a", "b", "d"]
    assert split_path("/é/x".encode()) == ["é", "x"]
    assert join_path(["a", "b"]) == b"/a/b" and join_path([]) == b"/"
    for escape in (b"..", b"/../etc", b"a/../../b"):
        with pytest.raises(OutsideRoot):
            split_path(escape)
    with pytest.raises(BadPath):
        split_path(b"\xff")


@given(st.lists(st.text(alphabet="ab.é", min_size=1, max_size=3), max_size=6))
def test_split_path_never_escapes(names: list[str]) -> None:
    """Whatever the path, the names found stay below the root and hold no '.' or '..'."""
    try:
        found = split_path("/".join(names).encode())
    except OutsideRoot:
        return
    assert all(name not in ("", ".", "..") for name in found)


def test_permissions() -> None:
    """Modes say the type, and write bits only when a change is possible."""
    assert permissions(True, True) == stat.S_IFDIR | 0o755
    assert permissions(False, False) == stat.S_IFREG | 0o444
