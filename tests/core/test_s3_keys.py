"""Bucket names and object keys of the S3 gateway (``tahoe.s3.keys``), and its error type."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tahoe.s3.errors import ERRORS, S3Error
from tahoe.s3.keys import (MAX_KEY_BYTES, check_bucket_name, join_key, listing_name,
                           split_key)


def refused(key: str) -> S3Error:
    with pytest.raises(S3Error) as info:
        split_key(key)
    return info.value


# ---------------------------------------------------------------- errors

def test_error_takes_status_and_message_from_the_table() -> None:
    """An S3Error without status or message gets S3's for its code."""
    error = S3Error("NoSuchKey", Key="a/b")
    assert (error.code, error.status, error.message) == ("NoSuchKey", 404,
                                                         "The specified key does not exist.")
    assert error.extra == {"Key": "a/b"}


def test_error_overrides_and_unknown_codes() -> None:
    """A given message and status win; an unknown code is a programming error."""
    error = S3Error("AccessDenied", "Request has expired", status=403)
    assert error.message == "Request has expired" and str(error).startswith("AccessDenied")
    with pytest.raises(KeyError):
        S3Error("NoSuchThing")


@pytest.mark.parametrize("code,status", [
    ("AccessDenied", 403), ("InvalidAccessKeyId", 403), ("SignatureDoesNotMatch", 403),
    ("RequestTimeTooSkewed", 403), ("AuthorizationHeaderMalformed", 400),
    ("NoSuchBucket", 404), ("BucketNotEmpty", 409), ("InvalidRange", 416),
    ("PreconditionFailed", 412), ("NotModified", 304), ("MethodNotAllowed", 405),
    ("NotImplemented", 501), ("MissingContentLength", 411), ("InternalError", 500),
    ("SlowDown", 503), ("EntityTooSmall", 400), ("InvalidPart", 400)])
def test_error_statuses_are_s3s(code: str, status: int) -> None:
    """The table gives each code the HTTP status S3 answers with."""
    assert ERRORS[code][0] == status


# ---------------------------------------------------------------- buckets

@pytest.mark.parametrize("name", ["abc", "my-bucket.2026", "a" * 63, "0ab", "a-b.c-d"])
def test_good_bucket_names(name: str) -> None:
    """Names following S3's rules pass unchanged."""
    assert check_bucket_name(name) == name


@pytest.mark.parametrize("name", [
    "ab", "a" * 64, "", "My-Bucket", "my_bucket", "-abc", "abc-", ".abc", "abc.", "a..b",
    "192.168.5.4", "xn--abc", "sthree-abc", "abc-s3alias", "abc--ol-s3", "ab c", "bücket"])
def test_bad_bucket_names(name: str) -> None:
    """Each broken rule is InvalidBucketName (400) naming the bucket."""
    with pytest.raises(S3Error) as info:
        check_bucket_name(name)
    assert info.value.code == "InvalidBucketName" and info.value.status == 400
    assert info.value.extra["BucketName"] == name


# ---------------------------------------------------------------- keys

@pytest.mark.parametrize("key,expected", [
    ("a", ([], "a", False)),
    ("a/b/c", (["a", "b"], "c", False)),
    ("a/b/", (["a", "b"], "", True)),
    ("a/", (["a"], "", True)),
    ("a b/ü.txt", (["a b"], "ü.txt", False)),
    ("...", ([], "...", False)),
    (".a/..b/c.", ([".a", "..b"], "c.", False)),
    ("a\\b", ([], "a\\b", False)),
])
def test_split_key(key: str, expected: tuple[list[str], str, bool]) -> None:
    """Keys split at '/' into directories and a leaf; a trailing '/' is a folder marker."""
    assert split_key(key) == expected


def test_empty_key_is_refused() -> None:
    """An empty key is InvalidArgument."""
    assert refused("").code == "InvalidArgument"


@pytest.mark.parametrize("key", ["a//b", "/a", "//", "/", "a/b//", "a//"])
def test_empty_segments_are_refused(key: str) -> None:
    """An empty segment anywhere (leading '/', '//') is InvalidArgument naming the rule."""
    error = refused(key)
    assert error.code == "InvalidArgument" and "empty path segment" in error.message


@pytest.mark.parametrize("key", [".", "..", "a/./b", "a/../b", "../a", "a/..", "a/./",
                                 "./"])
def test_dot_segments_are_refused(key: str) -> None:
    """A '.' or '..' segment is InvalidArgument naming the segment."""
    error = refused(key)
    assert error.code == "InvalidArgument" and "segment cannot be" in error.message


def test_key_length_limit_is_in_utf8_bytes() -> None:
    """1,024 UTF-8 bytes pass; 1,025 bytes (even in fewer characters) are KeyTooLongError."""
    assert split_key("k" * MAX_KEY_BYTES)[1] == "k" * 1024
    assert split_key("a/" * 511 + "bc")[1] == "bc"
    assert refused("k" * 1025).code == "KeyTooLongError"
    two_byte = "é" * 512 + "x"  # 1,025 bytes in 513 characters
    error = refused(two_byte)
    assert error.code == "KeyTooLongError" and error.status == 400
    assert error.extra["Size"] == "1025"


def test_non_nfc_keys_are_refused() -> None:
    """A key not in NFC would be renamed by Tahoe, so it is refused; its NFC form passes."""
    decomposed = "cafe\u0301/x"
    assert unicodedata.normalize("NFC", decomposed) != decomposed
    error = refused(decomposed)
    assert error.code == "InvalidArgument" and "NFC" in error.message
    assert split_key(unicodedata.normalize("NFC", decomposed)) == (["café"], "x", False)


def test_unencodable_keys_are_refused() -> None:
    """A key with a lone surrogate (bytes that were not UTF-8) is refused."""
    assert refused("a/\udcff").code == "InvalidArgument"


segment = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/"),
                  min_size=1, max_size=8).map(lambda s: unicodedata.normalize("NFC", s)) \
    .filter(lambda s: s not in ("", ".", ".."))


@given(dirs=st.lists(segment, max_size=5), leaf=segment | st.just(""))
def test_join_inverts_split(dirs: list[str], leaf: str) -> None:
    """join_key then split_key gives back the directories and leaf of any valid key."""
    key = join_key(dirs, leaf)
    if not key:
        return
    assert split_key(key) == (dirs, leaf, leaf == "")
    assert join_key(*split_key(key)[:2]) == key


@given(names=st.lists(st.tuples(segment, st.booleans()), unique_by=lambda t: t[0]))
def test_listing_names_give_key_order(names: list[tuple[str, bool]]) -> None:
    """Entries sorted by listing_name are in the order of the keys they lead to."""
    ordered = sorted(names, key=lambda t: listing_name(*t))
    first_keys = [name + "/" if is_dir else name for name, is_dir in ordered]
    assert first_keys == sorted(first_keys)
    assert [k.encode() for k in first_keys] == sorted(k.encode() for k in first_keys)
