"""The S3 gateway's request: bodies over S3's limit are dropped, not spooled."""
from __future__ import annotations

from twisted.web.test.requesthelper import DummyChannel

from tahoe.s3.channel import MAX_BODY, S3Request


def test_declared_length_over_the_limit_is_not_spooled() -> None:
    """A Content-Length over the limit keeps nothing of the body and marks the request."""
    request = S3Request(DummyChannel())
    request.gotLength(MAX_BODY + 1)
    request.handleContentChunk(b"x" * 1000)
    assert request.too_large == MAX_BODY + 1
    assert request.content.getvalue() == b""


class _SmallLimit(S3Request):
    max_body = 10


def test_counted_length_over_the_limit_stops_spooling() -> None:
    """A body of no declared length (HTTP chunked) is kept up to the limit only."""
    request = _SmallLimit(DummyChannel())
    request.gotLength(None)
    request.handleContentChunk(b"x" * 8)
    request.handleContentChunk(b"x" * 8)
    assert request.too_large == 16
    request.content.seek(0)
    assert request.content.read() == b"x" * 8


def test_small_bodies_are_spooled_as_usual() -> None:
    """Under the limit the body is kept whole."""
    request = S3Request(DummyChannel())
    request.gotLength(5)
    request.handleContentChunk(b"hello")
    assert request.too_large is None
    request.content.seek(0)
    assert request.content.read() == b"hello"


def test_grid_errors_are_retryable_others_internal() -> None:
    """Too few servers is ServiceUnavailable (503: clients retry), an upload's saying why
    its shares were not placed; anything else that is not an S3 error is InternalError
    (500), its message not passed on."""
    from tahoe.client.errors import NotEnoughSharesError, UploadUnhappinessError
    from tahoe.s3.server import grid_error
    unhappy = UploadUnhappinessError("placed 2 shares: 8 with no room", 2, 2, 7)
    for error in (unhappy, NotEnoughSharesError("only 2 of 3 shares", 2, 3)):
        refusal = grid_error(error, "REQ")
        assert (refusal.code, refusal.status) == ("ServiceUnavailable", 503)
    assert "(placed 2 shares: 8 with no room)" in grid_error(unhappy, "REQ").message
    try:
        raise ValueError("URI:DIR2:secret:cap")
    except ValueError as error:
        refusal = grid_error(error, "REQ")
    assert (refusal.code, refusal.status) == ("InternalError", 500)
    assert "URI" not in refusal.message
