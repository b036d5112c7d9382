"""Bucket names and object keys, and how a key maps onto directories.

An account's buckets are the child directories of its root; an object key's
``/`` separators are subdirectories, so ``photos/2026/a.jpg`` in bucket ``b``
is the file ``a.jpg`` in directory ``b/photos/2026``. A tree cannot hold every
key S3 can, so each key is checked here first; what passes is stored
faithfully, what fails gets a clear S3 error and nothing is written. Pure.

Bucket names (:func:`check_bucket_name`, S3's rules for new buckets;
``InvalidBucketName``):

========================================  ============================================
Rule                                      Example refused
========================================  ============================================
3 to 63 characters                        ``ab``
only ``a-z``, ``0-9``, ``.`` and ``-``    ``My_Bucket``
first and last a letter or digit          ``-logs``, ``logs.``
no two adjacent dots                      ``a..b``
not an IPv4 address                       ``192.168.5.4``
not S3's reserved prefixes and suffixes   ``xn--a``, ``sthree-a``, ``a-s3alias``, ``a--ol-s3``
========================================  ============================================

Object keys (:func:`split_key`):

==========================================  ==============================================
Key                                         Behaviour
==========================================  ==============================================
``a/b/c``                                   file ``c`` in directory ``a/b``
``a/b/`` (trailing ``/``)                   folder marker: the directory ``a/b`` itself
                                            (an empty body only; the store refuses data)
empty                                       ``InvalidArgument``
over 1,024 bytes of UTF-8                   ``KeyTooLongError``
an empty segment (``a//b``, ``/a``)         ``InvalidArgument``: a directory entry needs
                                            a name
a ``.`` or ``..`` segment                   ``InvalidArgument``: they name the directory
                                            itself or its parent in every other tool
not in Unicode NFC                          ``InvalidArgument``: Tahoe normalises child
                                            names to NFC, so the key would silently change
not encodable as UTF-8 (lone surrogates)    ``InvalidArgument``: not a child name
==========================================  ==============================================

A key whose directory part is already an object (``a`` stored, then ``a/b``)
or the other way round is a conflict of the tree, not of the key's text: the
store decides it (see ``docs/s3.md``).
"""
from __future__ import annotations

import re
import unicodedata

from .errors import S3Error

__all__ = ["MAX_KEY_BYTES", "check_bucket_name", "split_key", "join_key", "listing_name",
           "check_key"]

#: S3's limit on an object key, in UTF-8 bytes.
MAX_KEY_BYTES = 1024

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_IPV4 = re.compile(r"\d{1,3}(\.\d{1,3}){3}\Z")
_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def check_bucket_name(name: str) -> str:
    """``name`` if it is a valid bucket name by S3's rules (see the module docstring).

    :raises S3Error: ``InvalidBucketName`` naming the broken rule.
    """
    def refuse(why: str) -> S3Error:
        return S3Error("InvalidBucketName", f"The specified bucket is not valid: {why}.",
                       BucketName=name)
    if not 3 <= len(name) <= 63:
        raise refuse("a bucket name has 3 to 63 characters")
    if not _BUCKET.match(name):
        raise refuse("only lower-case letters, digits, '.' and '-', beginning and ending"
                     " with a letter or digit")
    if ".." in name:
        raise refuse("no two adjacent dots")
    if _IPV4.match(name):
        raise refuse("a bucket name is not an IP address")
    if name.startswith(_RESERVED_PREFIXES) or name.endswith(_RESERVED_SUFFIXES):
        raise refuse("the name uses a prefix or suffix that S3 reserves")
    return name


def _refuse_key(key: str, why: str) -> S3Error:
    return S3Error("InvalidArgument", f"This gateway cannot store the key: {why}.",
                   ArgumentName="key", ArgumentValue=key.encode("utf-8", "replace")
                   .decode("utf-8")[:256])


def check_key(key: str) -> str:
    """``key`` if the gateway can store it (the rules of the module docstring).

    :raises S3Error: ``KeyTooLongError`` for more than 1,024 UTF-8 bytes,
        ``InvalidArgument`` naming the rule for any other refusal.
    """
    if not key:
        raise _refuse_key(key, "the key is empty")
    try:
        encoded = key.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse_key(key, "the key is not valid UTF-8") from None
    if len(encoded) > MAX_KEY_BYTES:
        raise S3Error("KeyTooLongError", Size=str(len(encoded)),
                      MaxSizeAllowed=str(MAX_KEY_BYTES))
    if unicodedata.normalize("NFC", key) != key:
        raise _refuse_key(key, "the key is not in Unicode NFC, and directory entry names"
                               " are (it would be stored under another name)")
    segments = key.split("/")
    if key.endswith("/"):
        segments.pop()
    for segment in segments:
        if segment == "":
            raise _refuse_key(key, "an empty path segment ('//' or a leading '/') cannot"
                                   " be a directory entry")
        if segment in (".", ".."):
            raise _refuse_key(key, f"a '{segment}' segment cannot be a directory entry")
    return key


def split_key(key: str) -> tuple[list[str], str, bool]:
    """The directory names, leaf name and folder-marker flag of an object key.

    ``"a/b/c"`` gives ``(["a", "b"], "c", False)``; ``"a/b/"`` gives
    ``(["a", "b"], "", True)``, the folder marker of directory ``a/b``.

    :raises S3Error: as :func:`check_key`.
    """
    check_key(key)
    segments = key.split("/")
    if key.endswith("/"):
        return segments[:-1], "", True
    return segments[:-1], segments[-1], False


def join_key(dirs: list[str] | tuple[str, ...], leaf: str) -> str:
    """The key of ``leaf`` in directory ``dirs`` (``leaf=""``: the folder marker of ``dirs``).

    The inverse of :func:`split_key`: ``join_key(*split_key(k)[:2]) == k``.
    """
    return "".join(name + "/" for name in dirs) + leaf


def listing_name(name: str, is_directory: bool) -> str:
    """The name a directory entry sorts under in a listing (``name/`` for a directory).

    Sorting a directory's entries by this, and descending into directories in
    that order, lists the keys below it in S3's lexicographic order: a
    directory ``a`` holds keys ``a/...``, which sort after ``a-b`` and before ``a0``.
    """
    return name + "/" if is_directory else name
