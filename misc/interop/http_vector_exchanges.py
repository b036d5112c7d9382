"""The fixed inputs and requests of the HTTP storage protocol vector capture.

:mod:`capture_http_vectors` plays these on a real Tahoe-LAFS 1.20 storage node:
:func:`sequence` is the ordered list of single exchanges and
:func:`pipelining_experiments` the requests written back to back.  Every input is
a fixed byte pattern; only the swissnum (in ``Authorization``) depends on the
server.  Protocol: ``docs/specifications/http-storage-node-protocol.rst`` in
tahoe-lafs.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Sequence

import cbor2

HOST = "127.0.0.1"  # the Host header of every request; the nodes listen there too
CBOR = "application/cbor"
VERSION = "/storage/v1/version"

# Fixed inputs: 16-byte storage indexes, secrets and share data from byte patterns.
IMMUTABLE_SI = b"gbs-vectors-imm1"
IMMUTABLE_SI_2 = b"gbs-vectors-imm2"
MUTABLE_SI = b"gbs-vectors-mut1"
UNKNOWN_SI = b"gbs-vectors-none"
PIPELINE_SIS = (b"gbs-vectors-pip1", b"gbs-vectors-pip2", b"gbs-vectors-pip3")
RENEW_SECRET = bytes(range(0, 32))
CANCEL_SECRET = bytes(range(32, 64))
WRITE_ENABLER = bytes(range(64, 96))
OTHER_SECRET = bytes(range(96, 128))  # a second renew secret, a wrong write enabler
UPLOAD_SECRET = b"upload-secret-20byte"
WRONG_UPLOAD_SECRET = b"wrong-secret-20bytes"
SHARE_SIZE = 100
MUTABLE_DATA = (bytes(range(200, 240)), bytes(range(100, 140)))

# Why some answers differ between runs (see Step.varies).
AVAILABLE_SPACE = "available-space follows the disk"
SET_ORDER = ("the expected-secrets list in the text comes from a Python set: "
             "its order follows the hash seed")
ALLOW_ORDER = "the Allow header lists GET and HEAD in an order that follows the hash seed"


def share_data(share_number: int) -> bytes:
    """The 100 bytes of immutable share ``share_number`` (a fixed pattern)."""
    return bytes((share_number * 31 + i * 7) % 256 for i in range(SHARE_SIZE))


def si_b32(storage_index: bytes) -> str:
    """Tahoe's lowercase, unpadded RFC 4648 base32 of a storage index."""
    return base64.b32encode(storage_index).decode("ascii").lower().rstrip("=")


def b64(data: bytes) -> str:
    """Standard padded base64 of ``data``, as text."""
    return base64.b64encode(data).decode("ascii")


IMMUTABLE = f"/storage/v1/immutable/{si_b32(IMMUTABLE_SI)}"
IMMUTABLE_2 = f"/storage/v1/immutable/{si_b32(IMMUTABLE_SI_2)}"
MUTABLE = f"/storage/v1/mutable/{si_b32(MUTABLE_SI)}"


# --- Requests -------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One HTTP request exactly as written to the wire.

    Header values are text whose code points are the wire bytes (latin-1).
    ``body`` is every byte after the blank line (chunk framing included).
    """

    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    version: str = "HTTP/1.1"

    def to_bytes(self) -> bytes:
        """The request line, headers, blank line and body."""
        lines = [f"{self.method} {self.target} {self.version}"]
        lines += [f"{name}: {value}" for name, value in self.headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        return next((v for n, v in self.headers if n.lower() == name.lower()), None)


Headers = Sequence[tuple[str, str]]


def authorization(swissnum: str) -> str:
    """The ``Authorization`` value for a swissnum: ``Tahoe-LAFS <base64(swissnum)>``."""
    return "Tahoe-LAFS " + b64(swissnum.encode("ascii"))


def secret(kind: str, value: bytes) -> tuple[str, str]:
    """One ``X-Tahoe-Authorization`` header carrying secret ``kind``."""
    return ("X-Tahoe-Authorization", f"{kind} {b64(value)}")


LEASE_SECRETS = (secret("lease-renew-secret", RENEW_SECRET),
                 secret("lease-cancel-secret", CANCEL_SECRET))
UPLOAD = (secret("upload-secret", UPLOAD_SECRET),)
ALLOCATE_SECRETS = LEASE_SECRETS + UPLOAD
RTW_SECRETS = LEASE_SECRETS + (secret("write-enabler", WRITE_ENABLER),)
NO_AUTH = object()  # sentinel: send no Authorization header


@dataclass(frozen=True)
class RequestFactory:
    """Builds requests carrying one server's ``Authorization`` header."""

    swissnum: str

    def make(self, method: str, target: str, headers: Headers = (), body: bytes = b"",
             auth: object = None, version: str = "HTTP/1.1") -> Request:
        """A request with Host, Authorization (unless ``auth`` replaces or omits it),
        ``headers`` and, when there is a body and no ``Transfer-Encoding``, Content-Length."""
        all_headers = [("Host", HOST)]
        if auth is None:
            all_headers.append(("Authorization", authorization(self.swissnum)))
        elif auth is not NO_AUTH:
            all_headers.append(("Authorization", str(auth)))
        all_headers += headers
        names = {n.lower() for n, _ in headers}
        if body and not names & {"transfer-encoding", "content-length"}:
            all_headers.append(("Content-Length", str(len(body))))
        return Request(method, target, tuple(all_headers), body, version)

    def cbor(self, method: str, target: str, value: object, headers: Headers = ()) -> Request:
        """A request with ``value`` CBOR-encoded as its body (sets get tag 258)."""
        return self.make(method, target, (("Content-Type", CBOR), *headers), cbor2.dumps(value))

    def get(self, target: str, *headers: tuple[str, str], auth: object = None) -> Request:
        """A GET request."""
        return self.make("GET", target, headers, auth=auth)

    def patch(self, target: str, content_range: str | None, body: bytes,
              upload: bytes = UPLOAD_SECRET, extra: Headers = ()) -> Request:
        """A PATCH (immutable write) with an upload secret and, unless None, a Content-Range."""
        headers = [secret("upload-secret", upload), *extra]
        if content_range is not None:
            headers.append(("Content-Range", content_range))
        return self.make("PATCH", target, headers, body)

    def read_test_write(self, vectors: dict[Any, Any], read: list[Any],
                        secrets: Headers = RTW_SECRETS, target: str = MUTABLE) -> Request:
        """A mutable read-test-write with test-and-write ``vectors`` and read vector ``read``."""
        body = {"test-write-vectors": vectors, "read-vector": read}
        return self.cbor("POST", f"{target}/read-test-write", body, secrets)


def chunked(body: bytes, size: int) -> bytes:
    """``body`` in chunked transfer coding, in chunks of ``size`` bytes."""
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def write_vector(test: list[Any], data: bytes, new_length: int | None = None,
                 offset: int = 0) -> dict[str, Any]:
    """Test vectors ``test`` and one write of ``data`` at ``offset`` for one share."""
    return {"test": test, "write": [{"offset": offset, "data": data}], "new-length": new_length}


def truncation(new_length: int) -> dict[str, Any]:
    """No tests, no writes, only a new length for one share."""
    return {"test": [], "write": [], "new-length": new_length}


EMPTY_TEST = [{"offset": 0, "size": 1, "specimen": b""}]  # passes only if the share is absent


# --- The fixed sequence -----------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One exchange of the sequence; ``varies`` says why its answer cannot repeat, if known."""

    name: str
    note: str
    request: Request
    varies: str | None = None


def generic_steps(rf: RequestFactory) -> list[Step]:
    """Version, content negotiation, authorization and routing."""
    credentials = b64(rf.swissnum.encode("ascii"))
    return [
        Step("version", "version map; no Accept header", rf.get(VERSION), AVAILABLE_SPACE),
        Step("version-accept-cbor", "Accept: application/cbor",
             rf.get(VERSION, ("Accept", CBOR)), AVAILABLE_SPACE),
        Step("version-accept-json", "Accept: application/json only",
             rf.get(VERSION, ("Accept", "application/json"))),
        Step("version-accept-any", "Accept: */*", rf.get(VERSION, ("Accept", "*/*"))),
        Step("version-accept-cbor-then-json", "CBOR preferred over JSON",
             rf.get(VERSION, ("Accept", "application/cbor, application/json;q=0.5")),
             AVAILABLE_SPACE),
        Step("version-accept-json-then-cbor", "JSON listed first, both q=1",
             rf.get(VERSION, ("Accept", "application/json, application/cbor"))),
        Step("version-head", "HEAD on a GET route", rf.make("HEAD", VERSION)),
        Step("auth-missing", "no Authorization header", rf.get(VERSION, auth=NO_AUTH)),
        Step("auth-wrong-swissnum", "a well-formed Authorization with another swissnum",
             rf.get(VERSION, auth=authorization("x" * 32))),
        Step("auth-malformed-base64", "credentials that are not base64",
             rf.get(VERSION, auth="Tahoe-LAFS !!not base64!!")),
        Step("auth-scheme-only", "scheme, no credentials", rf.get(VERSION, auth="Tahoe-LAFS")),
        Step("auth-lowercase-scheme", "right swissnum, scheme in lower case",
             rf.get(VERSION, auth=f"tahoe-lafs {credentials}")),
        Step("auth-bearer", "right swissnum, other scheme",
             rf.get(VERSION, auth=f"Bearer {credentials}")),
        Step("auth-non-utf8", "Authorization bytes that are not UTF-8 (0xff 0xfe)",
             rf.get(VERSION, auth="Tahoe-LAFS \xff\xfe")),
        Step("unknown-path", "unknown path, authorized", rf.get("/storage/v1/nonexistent")),
        Step("unknown-path-no-auth", "unknown path, no auth",
             rf.get("/storage/v1/nonexistent", auth=NO_AUTH)),
        Step("version-v2", "unknown protocol version", rf.get("/storage/v2/version")),
        Step("version-trailing-slash", "trailing slash", rf.get(VERSION + "/")),
        Step("version-query-string", "a query string", rf.get(VERSION + "?x=1"), AVAILABLE_SPACE),
        Step("version-wrong-method", "POST on a GET-only route",
             rf.make("POST", VERSION, [("Content-Type", CBOR)], b"\xa0"), ALLOW_ORDER),
        Step("version-wrong-method-no-auth", "DELETE on a GET-only route, no auth",
             rf.make("DELETE", VERSION, auth=NO_AUTH), ALLOW_ORDER),
    ]


def allocation_steps(rf: RequestFactory) -> list[Step]:
    """Immutable bucket allocation and its errors (shares 0, 1, 2 of the first index)."""
    allocation = {"share-numbers": {0, 1, 2}, "allocated-size": SHARE_SIZE}
    unknown = f"/storage/v1/immutable/{si_b32(UNKNOWN_SI)}"

    def allocate(secrets: Headers = ALLOCATE_SECRETS, value: object = None,
                 target: str = IMMUTABLE, method: str = "POST") -> Request:
        return rf.cbor(method, target, allocation if value is None else value, secrets)

    def raw(content_type: str, body: bytes) -> Request:
        return rf.make("POST", IMMUTABLE, (("Content-Type", content_type), *ALLOCATE_SECRETS), body)

    def sizes(shares: object, size: object = SHARE_SIZE) -> dict[str, object]:
        return {"share-numbers": shares, "allocated-size": size}

    joined = ", ".join(value for _, value in ALLOCATE_SECRETS)
    uppercase_si = "/storage/v1/immutable/" + si_b32(IMMUTABLE_SI).upper()
    return [
        Step("immutable-shares-unknown-si", "list shares of an unknown storage index",
             rf.get(f"{unknown}/shares")),
        Step("immutable-allocate", "allocate shares {0,1,2} of 100 bytes", allocate()),
        Step("immutable-allocate-repeat",
             "the same call again, same upload secret, uploads in progress", allocate()),
        Step("immutable-allocate-other-upload-secret", "the same call with another upload secret",
             allocate(LEASE_SECRETS + (secret("upload-secret", WRONG_UPLOAD_SECRET),))),
        Step("immutable-shares-in-progress", "list shares while uploads are in progress",
             rf.get(f"{IMMUTABLE}/shares")),
        Step("immutable-allocate-missing-upload-secret", "no upload-secret",
             allocate(LEASE_SECRETS), SET_ORDER),
        Step("immutable-allocate-no-secrets", "no X-Tahoe-Authorization at all",
             allocate(()), SET_ORDER),
        Step("immutable-allocate-short-lease-secret", "lease-renew-secret of 31 bytes",
             allocate((secret("lease-renew-secret", RENEW_SECRET[:31]), LEASE_SECRETS[1],
                       *UPLOAD))),
        Step("immutable-allocate-unknown-secret-kind", "an extra secret of an unknown kind",
             allocate(ALLOCATE_SECRETS + (secret("frobnicate-secret", RENEW_SECRET),))),
        Step("immutable-allocate-extra-write-enabler", "an extra, known but unexpected, secret",
             allocate(ALLOCATE_SECRETS + (secret("write-enabler", WRITE_ENABLER),)), SET_ORDER),
        Step("immutable-allocate-empty-secret", "upload-secret whose base64 decodes to nothing",
             allocate(LEASE_SECRETS + (("X-Tahoe-Authorization", "upload-secret !!!!"),))),
        Step("immutable-allocate-secret-no-value", "upload-secret with no value",
             allocate(LEASE_SECRETS + (("X-Tahoe-Authorization", "upload-secret"),))),
        Step("immutable-allocate-duplicate-upload-secret", "upload-secret sent twice",
             allocate(ALLOCATE_SECRETS + UPLOAD)),
        Step("immutable-allocate-comma-joined-secrets",
             "all three secrets in one comma-joined header line",
             allocate((("X-Tahoe-Authorization", joined),)), SET_ORDER),
        Step("immutable-allocate-json", "JSON body, Content-Type application/json",
             raw("application/json", json.dumps(sizes([0])).encode())),
        Step("immutable-allocate-no-content-type",
             "CBOR body without Content-Type (second storage index, share 0)",
             rf.make("POST", IMMUTABLE_2, ALLOCATE_SECRETS, cbor2.dumps(sizes({0})))),
        Step("immutable-allocate-malformed-cbor", "not CBOR", raw(CBOR, b"\xff\x00not cbor")),
        Step("immutable-allocate-array-not-set", "share-numbers as a plain array (no tag 258)",
             allocate(value=sizes([0, 1, 2]))),
        Step("immutable-allocate-257-shares", "257 share numbers",
             allocate(value=sizes(set(range(257))))),
        Step("immutable-allocate-negative-size", "allocated-size -1",
             allocate(value=sizes({0}, -1))),
        Step("immutable-allocate-extra-key", "an extra map key",
             allocate(value={**allocation, "extra": 1})),
        Step("immutable-allocate-missing-key", "no allocated-size",
             allocate(value={"share-numbers": {0}})),
        Step("immutable-allocate-too-large-body", "a body over 8192 bytes",
             allocate(value={**allocation, "padding": bytes(9000)})),
        Step("immutable-allocate-huge-size", "allocated-size 2**60, more than the disk",
             allocate(value=sizes({1}, 2**60), target=IMMUTABLE_2)),
        Step("immutable-allocate-share-300", "share number 300 (> 255)",
             allocate(value=sizes({300}), target=IMMUTABLE_2)),
        Step("immutable-allocate-si-short", "storage index of 25 base32 characters",
             allocate(target=IMMUTABLE[:-1])),
        Step("immutable-allocate-si-uppercase", "storage index in upper case",
             allocate(target=uppercase_si)),
        Step("immutable-allocate-si-not-base32",
             "storage index with characters outside the base32 alphabet",
             allocate(target=IMMUTABLE[:-2] + "18")),
        Step("immutable-allocate-si-noncanonical",
             "26 base32 characters whose unused trailing bits are not zero",
             allocate(target=IMMUTABLE[:-1] + "b")),
        Step("immutable-allocate-wrong-method", "PUT instead of POST", allocate(method="PUT")),
    ]


def write_steps(rf: RequestFactory) -> list[Step]:
    """Immutable writes: share 0 in pieces with errors between, share 1 at once, share 2 begun."""
    data = share_data(0)
    share = f"{IMMUTABLE}/0"
    unknown = f"/storage/v1/immutable/{si_b32(UNKNOWN_SI)}/0"
    chunked_body = chunked(share_data(0), 32)
    return [
        Step("immutable-read-while-uploading", "read a share that is being uploaded",
             rf.get(share, ("Range", "bytes=0-9"))),
        Step("immutable-write-first-half", "bytes 0-49 of share 0",
             rf.patch(share, "bytes 0-49/100", data[:50])),
        Step("immutable-write-conflicting-overlap",
             "bytes 40-59 with data that differs from what was written at 40-49",
             rf.patch(share, "bytes 40-59/100", bytes(20))),
        Step("immutable-write-identical-overlap",
             "bytes 40-59, agreeing with what was written at 40-49",
             rf.patch(share, "bytes 40-59/100", data[40:60])),
        Step("immutable-write-wrong-upload-secret", "another upload secret",
             rf.patch(share, "bytes 60-64/100", data[60:65], WRONG_UPLOAD_SECRET)),
        Step("immutable-write-no-upload-secret", "no X-Tahoe-Authorization",
             rf.make("PATCH", share, [("Content-Range", "bytes 60-64/100")], data[60:65])),
        Step("immutable-write-no-content-range", "no Content-Range",
             rf.patch(share, None, data[60:65])),
        Step("immutable-write-content-range-not-bytes", "Content-Range unit other than bytes",
             rf.patch(share, "items 60-64/100", data[60:65])),
        Step("immutable-write-content-range-malformed", "Content-Range that does not parse",
             rf.patch(share, "bytes=60-64", data[60:65])),
        Step("immutable-write-content-range-unknown-total",
             "Content-Range with total '*' (correct data)",
             rf.patch(share, "bytes 60-64/*", data[60:65])),
        Step("immutable-write-content-range-wrong-total",
             "Content-Range with total 1000, not the allocated 100 (correct data)",
             rf.patch(share, "bytes 65-69/1000", data[65:70])),
        Step("immutable-write-past-allocated-size", "bytes 95-104 of a 100-byte share",
             rf.patch(share, "bytes 95-104/110", bytes(10))),
        Step("immutable-write-body-longer-than-range",
             "Content-Range of 5 bytes, body (Content-Length) of 10 correct bytes",
             rf.patch(share, "bytes 70-74/100", data[70:80])),
        Step("immutable-write-body-shorter-than-range",
             "Content-Range of 20 bytes, body (Content-Length) of 10 correct bytes",
             rf.patch(share, "bytes 80-99/100", data[80:90])),
        Step("immutable-write-after-short-body",
             "bytes 90-94: the 'required' answer shows whether the short body's 10 bytes were kept",
             rf.patch(share, "bytes 90-94/100", data[90:95])),
        Step("immutable-write-unallocated-share", "share number never allocated",
             rf.patch(f"{IMMUTABLE}/7", "bytes 0-9/100", share_data(7)[:10])),
        Step("immutable-write-unknown-si", "storage index never allocated",
             rf.patch(unknown, "bytes 0-9/100", data[:10])),
        Step("immutable-write-completing", "bytes 50-99, completing share 0",
             rf.patch(share, "bytes 50-99/100", data[50:])),
        Step("immutable-write-after-completion", "share 0 is complete",
             rf.patch(share, "bytes 0-9/100", data[:10])),
        Step("immutable-write-whole-share", "share 1 in one write",
             rf.patch(f"{IMMUTABLE}/1", "bytes 0-99/100", share_data(1))),
        Step("immutable-write-share2-part", "bytes 0-9 of share 2, left incomplete",
             rf.patch(f"{IMMUTABLE}/2", "bytes 0-9/100", share_data(2)[:10])),
        Step("immutable-write-chunked-request",
             "whole share 0 of the second storage index, body in chunked transfer coding",
             rf.patch(f"{IMMUTABLE_2}/0", "bytes 0-99/100", chunked_body,
                      extra=[("Transfer-Encoding", "chunked")])),
        Step("immutable-shares-after-completion", "shares 0 and 1 complete, 2 not",
             rf.get(f"{IMMUTABLE}/shares")),
    ]


def immutable_read_steps(rf: RequestFactory) -> list[Step]:
    """Reads of share 0 with every kind of Range, and of shares that cannot be read."""
    ranges = [
        ("range-first-10", "bytes=0-9", "first ten bytes"),
        ("range-past-end", "bytes=90-199", "range running past the end"),
        ("range-start-at-end", "bytes=100-109", "range starting at the end"),
        ("range-start-past-end", "bytes=200-209", "range starting past the end"),
        ("range-two-ranges", "bytes=0-1,5-6", "two ranges"),
        ("range-open-ended", "bytes=5-", "open-ended range"),
        ("range-suffix", "bytes=-5", "suffix range"),
        ("range-not-bytes", "items=0-9", "unit other than bytes"),
        ("range-malformed", "bytes=abc", "range that does not parse"),
        ("range-reversed", "bytes=9-0", "last position before first"),
    ]
    first_ten = ("Range", "bytes=0-9")
    steps = [Step(f"immutable-read-{name}", f"share 0, Range {value}: {note}",
                  rf.get(f"{IMMUTABLE}/0", ("Range", value))) for name, value, note in ranges]
    return steps + [
        Step("immutable-read-no-range", "share 0, no Range header", rf.get(f"{IMMUTABLE}/0")),
        Step("immutable-read-unknown-share", "unknown share number",
             rf.get(f"{IMMUTABLE}/9", first_ten)),
        Step("immutable-read-unknown-si", "unknown storage index",
             rf.get(f"/storage/v1/immutable/{si_b32(UNKNOWN_SI)}/0", first_ten)),
        Step("immutable-read-incomplete-share", "share 2, still being uploaded",
             rf.get(f"{IMMUTABLE}/2", first_ten)),
        Step("immutable-read-chunked-upload",
             "read back the share uploaded with a chunked request body",
             rf.get(f"{IMMUTABLE_2}/0")),
    ]


def abort_corrupt_lease_steps(rf: RequestFactory) -> list[Step]:
    """Aborting uploads, advising corruption of immutable shares, adding leases."""
    lease = f"/storage/v1/lease/{si_b32(IMMUTABLE_SI)}"
    allocation = {"share-numbers": {0, 1, 2}, "allocated-size": SHARE_SIZE}
    wrong_upload = [secret("upload-secret", WRONG_UPLOAD_SECRET)]
    other_lease = (secret("lease-renew-secret", OTHER_SECRET), LEASE_SECRETS[1])
    return [
        Step("immutable-abort-wrong-secret",
             "abort share 2 (in progress) with another upload secret",
             rf.make("PUT", f"{IMMUTABLE}/2/abort", wrong_upload)),
        Step("immutable-abort-no-secret", "abort share 2 without secret",
             rf.make("PUT", f"{IMMUTABLE}/2/abort")),
        Step("immutable-abort-in-progress", "abort share 2 (in progress)",
             rf.make("PUT", f"{IMMUTABLE}/2/abort", UPLOAD)),
        Step("immutable-abort-again", "abort share 2 again",
             rf.make("PUT", f"{IMMUTABLE}/2/abort", UPLOAD)),
        Step("immutable-abort-completed", "abort share 0 (complete)",
             rf.make("PUT", f"{IMMUTABLE}/0/abort", UPLOAD)),
        Step("immutable-abort-unknown", "abort on an unknown storage index",
             rf.make("PUT", f"/storage/v1/immutable/{si_b32(UNKNOWN_SI)}/0/abort", UPLOAD)),
        Step("immutable-abort-wrong-method", "POST instead of PUT",
             rf.make("POST", f"{IMMUTABLE}/2/abort", UPLOAD)),
        Step("immutable-allocate-after-abort", "allocate {0,1,2} again after share 2 was aborted",
             rf.cbor("POST", IMMUTABLE, allocation, ALLOCATE_SECRETS)),
        Step("immutable-shares-after-abort", "list shares after the abort",
             rf.get(f"{IMMUTABLE}/shares")),
        Step("immutable-corrupt", "advise share 0 is corrupt",
             rf.cbor("POST", f"{IMMUTABLE}/0/corrupt", {"reason": "vector test: bad hash"})),
        Step("immutable-corrupt-unknown-share", "unknown share",
             rf.cbor("POST", f"{IMMUTABLE}/9/corrupt", {"reason": "x"})),
        Step("immutable-corrupt-empty-reason", "empty reason",
             rf.cbor("POST", f"{IMMUTABLE}/0/corrupt", {"reason": ""})),
        Step("immutable-corrupt-reason-bytes", "reason as a byte string",
             rf.cbor("POST", f"{IMMUTABLE}/0/corrupt", {"reason": b"bytes"})),
        Step("immutable-corrupt-json", "JSON body",
             rf.make("POST", f"{IMMUTABLE}/0/corrupt", [("Content-Type", "application/json")],
                     b'{"reason": "x"}')),
        Step("immutable-corrupt-malformed", "not CBOR",
             rf.make("POST", f"{IMMUTABLE}/0/corrupt", [("Content-Type", CBOR)], b"\xff")),
        Step("lease-renew", "renew the lease on shares 0 and 1",
             rf.make("PUT", lease, LEASE_SECRETS)),
        Step("lease-add-other-secret", "another renew secret: adds a lease",
             rf.make("PUT", lease, other_lease)),
        Step("lease-unknown-si", "unknown storage index",
             rf.make("PUT", f"/storage/v1/lease/{si_b32(UNKNOWN_SI)}", LEASE_SECRETS)),
        Step("lease-missing-secrets", "no secrets", rf.make("PUT", lease), SET_ORDER),
        Step("lease-missing-cancel-secret", "no lease-cancel-secret",
             rf.make("PUT", lease, LEASE_SECRETS[:1]), SET_ORDER),
        Step("lease-extra-upload-secret", "an extra upload-secret",
             rf.make("PUT", lease, ALLOCATE_SECRETS), SET_ORDER),
    ]


def mutable_write_steps(rf: RequestFactory) -> list[Step]:
    """Read-test-write on shares 0 and 1 of the mutable index, and its errors."""
    rtw = rf.read_test_write
    immutable_as_mutable = f"/storage/v1/mutable/{si_b32(IMMUTABLE_SI)}"
    wrong_enabler = LEASE_SECRETS + (secret("write-enabler", OTHER_SECRET),)
    right_first_four = [{"offset": 0, "size": 4, "specimen": MUTABLE_DATA[0][:4]}]
    return [
        Step("mutable-shares-unknown-si", "list shares before any write",
             rf.get(f"{MUTABLE}/shares")),
        Step("mutable-create-share-0",
             "create share 0: test offset 0 size 1 specimen b'' (no share yet), write 40 bytes",
             rtw({0: write_vector(EMPTY_TEST, MUTABLE_DATA[0])}, [])),
        Step("mutable-create-share-1",
             "create share 1 (new-length 40), read vector offset 0 size 5 (read before the write)",
             rtw({1: write_vector(EMPTY_TEST, MUTABLE_DATA[1], 40)}, [{"offset": 0, "size": 5}])),
        Step("mutable-read-vectors-only", "no write vectors; read 0-3 and 38-47 of every share",
             rtw({}, [{"offset": 0, "size": 4}, {"offset": 38, "size": 10}])),
        Step("mutable-test-fails",
             "test offset 0 size 1 specimen b'' on existing share 0: fails",
             rtw({0: write_vector(EMPTY_TEST, b"never written")}, [{"offset": 0, "size": 3}])),
        Step("mutable-test-passes", "test of the right 4 bytes passes; overwrite them with b'NEW!'",
             rtw({0: write_vector(right_first_four, b"NEW!")}, [{"offset": 0, "size": 4}])),
        Step("mutable-wrong-write-enabler", "another write-enabler",
             rtw({0: write_vector([], b"x")}, [], wrong_enabler)),
        Step("mutable-missing-write-enabler", "no write-enabler",
             rtw({0: write_vector([], b"x")}, [], LEASE_SECRETS), SET_ORDER),
        Step("mutable-write-past-end", "write 4 bytes at offset 50 of a 40-byte share",
             rtw({0: write_vector([], b"tail", offset=50)}, [])),
        Step("mutable-shrink", "share 1: new-length 10", rtw({1: truncation(10)}, [])),
        Step("mutable-extend", "share 1: new-length 60 (longer than the data)",
             rtw({1: truncation(60)}, [{"offset": 0, "size": 100}])),
        Step("mutable-read-after-extend", "share 1 after new-length 60, no Range",
             rf.get(f"{MUTABLE}/1")),
        Step("mutable-shares-before-delete", "shares 0 and 1", rf.get(f"{MUTABLE}/shares")),
        Step("mutable-delete-share-1", "share 1: new-length 0", rtw({1: truncation(0)}, [])),
        Step("mutable-shares-after-delete", "after new-length 0 on share 1",
             rf.get(f"{MUTABLE}/shares")),
        Step("mutable-malformed-cbor", "not CBOR",
             rf.make("POST", f"{MUTABLE}/read-test-write",
                     (("Content-Type", CBOR), *RTW_SECRETS), b"\xff")),
        Step("mutable-json", "JSON body",
             rf.make("POST", f"{MUTABLE}/read-test-write",
                     (("Content-Type", "application/json"), *RTW_SECRETS),
                     b'{"test-write-vectors": {}, "read-vector": []}')),
        Step("mutable-string-share-number", "share number as a text key",
             rtw({"0": write_vector([], b"x")}, [])),
        Step("mutable-missing-specimen", "test vector without specimen",
             rtw({0: write_vector([{"offset": 0, "size": 1}], b"x")}, [])),
        Step("mutable-missing-new-length", "write vector without new-length",
             rtw({0: {"test": [], "write": []}}, [])),
        Step("mutable-31-read-vectors", "31 read vectors (limit 30)",
             rtw({}, [{"offset": 0, "size": 1}] * 31)),
        Step("mutable-no-read-vector-key", "no read-vector key",
             rf.cbor("POST", f"{MUTABLE}/read-test-write", {"test-write-vectors": {}},
                     RTW_SECRETS)),
        Step("mutable-rtw-on-immutable-si", "read-test-write on the immutable storage index",
             rtw({0: write_vector(EMPTY_TEST, b"x")}, [], target=immutable_as_mutable)),
    ]


def mutable_read_steps(rf: RequestFactory) -> list[Step]:
    """Mutable reads, cross-kind reads, mutable corruption advisories and leases."""
    first_ten = ("Range", "bytes=0-9")
    unknown = si_b32(UNKNOWN_SI)
    immutable_si, mutable_si = si_b32(IMMUTABLE_SI), si_b32(MUTABLE_SI)
    return [
        Step("mutable-read-range-first-10", "share 0, bytes=0-9",
             rf.get(f"{MUTABLE}/0", first_ten)),
        Step("mutable-read-no-range", "share 0, no Range", rf.get(f"{MUTABLE}/0")),
        Step("mutable-read-range-past-end", "share 0 (54 bytes), bytes=50-199",
             rf.get(f"{MUTABLE}/0", ("Range", "bytes=50-199"))),
        Step("mutable-read-range-start-past-end", "share 0, bytes=100-109",
             rf.get(f"{MUTABLE}/0", ("Range", "bytes=100-109"))),
        Step("mutable-read-range-open-ended", "open-ended range",
             rf.get(f"{MUTABLE}/0", ("Range", "bytes=5-"))),
        Step("mutable-read-range-two-ranges", "two ranges",
             rf.get(f"{MUTABLE}/0", ("Range", "bytes=0-1,5-6"))),
        Step("mutable-read-deleted-share", "share 1 (deleted)", rf.get(f"{MUTABLE}/1", first_ten)),
        Step("mutable-read-unknown-si", "unknown storage index",
             rf.get(f"/storage/v1/mutable/{unknown}/0", first_ten)),
        Step("mutable-read-of-immutable", "mutable read of an immutable share",
             rf.get(f"/storage/v1/mutable/{immutable_si}/0", first_ten)),
        Step("immutable-read-of-mutable", "immutable read of a mutable share",
             rf.get(f"/storage/v1/immutable/{mutable_si}/0", first_ten)),
        Step("immutable-shares-of-mutable", "immutable share list of a mutable storage index",
             rf.get(f"/storage/v1/immutable/{mutable_si}/shares")),
        Step("mutable-shares-of-immutable", "mutable share list of an immutable storage index",
             rf.get(f"/storage/v1/mutable/{immutable_si}/shares")),
        Step("mutable-corrupt", "advise share 0 is corrupt",
             rf.cbor("POST", f"{MUTABLE}/0/corrupt", {"reason": "vector test: bad signature"})),
        Step("mutable-corrupt-unknown-share", "unknown share",
             rf.cbor("POST", f"{MUTABLE}/5/corrupt", {"reason": "x"})),
        Step("mutable-corrupt-empty-reason", "empty reason",
             rf.cbor("POST", f"{MUTABLE}/0/corrupt", {"reason": ""})),
        Step("lease-renew-mutable", "lease on the mutable",
             rf.make("PUT", f"/storage/v1/lease/{mutable_si}", LEASE_SECRETS)),
    ]


def framing_steps(rf: RequestFactory) -> list[Step]:
    """A chunked request body, HTTP/1.0, and Connection: close (these last two close)."""
    body = chunked(cbor2.dumps({"share-numbers": {2}, "allocated-size": 10}), 7)
    headers = (("Content-Type", CBOR), ("Transfer-Encoding", "chunked"), *ALLOCATE_SECRETS)
    return [
        Step("allocate-chunked-request", "allocate with a chunked request body",
             rf.make("POST", IMMUTABLE_2, headers, body)),
        Step("version-http10", "an HTTP/1.0 request (no keep-alive)",
             rf.make("GET", VERSION, version="HTTP/1.0"), AVAILABLE_SPACE),
        Step("version-connection-close", "Connection: close",
             rf.get(VERSION, ("Connection", "close")), AVAILABLE_SPACE),
    ]


def sequence(rf: RequestFactory) -> list[Step]:
    """The fixed, ordered exchanges played on a fresh server."""
    return [step for steps in (generic_steps, allocation_steps, write_steps, immutable_read_steps,
                               abort_corrupt_lease_steps, mutable_write_steps, mutable_read_steps,
                               framing_steps)
            for step in steps(rf)]


# --- Pipelining -------------------------------------------------------------------------


@dataclass(frozen=True)
class Pipelined:
    """Requests written back to back in one send, with the (status, CBOR value or raw body)
    expected for each; an expected body of None is not checked."""

    name: str
    note: str
    requests: tuple[Request, ...]
    expected: tuple[tuple[int, Any], ...]


def pipelining_experiments(rf: RequestFactory) -> list[Pipelined]:
    """Pipelined upload, upload-and-read, and a pipeline with failing requests in it."""
    first, second, third = (f"/storage/v1/immutable/{si_b32(s)}" for s in PIPELINE_SIS)
    allocation = {"share-numbers": {0}, "allocated-size": SHARE_SIZE}
    allocated = {"already-have": set(), "allocated": {0}}
    data = share_data(0)

    def patch(target: str, start: int, end: int, upload: bytes = UPLOAD_SECRET) -> Request:
        content_range = f"bytes {start}-{end - 1}/{SHARE_SIZE}"
        return rf.patch(f"{target}/0", content_range, data[start:end], upload)

    def allocate(target: str) -> Request:
        return rf.cbor("POST", target, allocation, ALLOCATE_SECRETS)

    malformed = rf.make("POST", third, (("Content-Type", CBOR), *ALLOCATE_SECRETS), b"\xff")
    return [
        Pipelined("allocate-and-upload",
                  "allocate share 0, then two PATCHes writing it, in one send",
                  (allocate(first), patch(first, 0, 50), patch(first, 50, 100)),
                  ((200, allocated), (200, {"required": [{"begin": 50, "end": 100}]}),
                   (201, {"required": []}))),
        Pipelined("allocate-upload-list-read",
                  "allocate, one PATCH, list shares, read the share, in one send",
                  (allocate(second), patch(second, 0, 100), rf.get(f"{second}/shares"),
                   rf.get(f"{second}/0", ("Range", "bytes=0-99"))),
                  ((200, allocated), (201, {"required": []}), (200, {0}), (206, data))),
        Pipelined("pipeline-with-errors",
                  "allocate, a PATCH with a wrong secret (401), a malformed allocate (400), "
                  "an unknown path (404), then the right PATCH, in one send",
                  (allocate(third), patch(third, 0, 100, WRONG_UPLOAD_SECRET), malformed,
                   rf.get("/storage/v1/nonexistent"), patch(third, 0, 100)),
                  ((200, allocated), (401, b""), (400, None), (404, None),
                   (201, {"required": []}))),
    ]
