"""Hostile input at every pure parser behind a trust boundary raises only that layer's errors.

Caps (typed by anyone), ``tahoe.cfg``, ``servers.yaml`` and ``introducers.yaml``
(edited by hand), signed announcements (from any introducer), share
containers and directory contents (read back from disk or from servers):
random bytes, and real values with a few bytes changed, either parse or fail
with the documented error, never with ``IndexError``, ``struct.error`` and
the like (which the shells would turn into a 500 or a crash).  A changed
announcement never verifies.  Counts go to the reliability ledger.
"""
from __future__ import annotations

import struct

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.caps.errors import CapError
from tahoe.caps.parse import parse_cap
from tahoe.crypto.ed25519 import SigningKey
from tahoe.dirnode.errors import DirnodeError
from tahoe.dirnode.packing import unpack_directory
from tahoe.introducer.announcement import sign_announcement, verify_announcement
from tahoe.introducer.errors import BadAnnouncement
from tahoe.node.config import parse_config
from tahoe.node.errors import ConfigError
from tahoe.node.yaml_files import parse_introducers_yaml, parse_servers_yaml
from tahoe.storage.errors import StorageError
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import Lease
from tahoe.storage.mutable_container import MutableContainer
from tahoe.storage.randomaccess import MemoryFile
from tests.support.reliability import record_fuzz, runs

FUZZ = settings(max_examples=runs(300), deadline=None)

REAL_CAPS = [
    "URI:CHK:zpxthyvacnd2b72p3lsmvqewsa:fr5xuq3p6jwhueu55g7rkksajuqjztuaczjixe55u6yyawaxuwiq"
    ":3:4:1100",
    "URI:DIR2:52kfb2fztzts5lfqmhdhn7efgi:blakgkvnjw2yewj4v3fhimqbjmchwksw6cjja6qvwvy3j5ejpwcq",
    "URI:SSK:u3u4tgsrvpe5qd6cc2cvo2r4xq:nul3ijjiw5nth6zjc76oymvyvcni6ml7lbberaq4xeqklsh4sv6a",
    "URI:LIT:pa",
    "URI:MDMF-RO:erfohr3go54gs47kk2wqkjxyki:d3hkyyv7qohezrzpsgkzxqttu6lalsfexeakh2rita3uivqz2dna",
    "URI:DIR2-CHK:zpxthyvacnd2b72p3lsmvqewsa:fr5xuq3p6jwhueu55g7rkksajuqjztuaczjixe55u6yyawaxuwiq"
    ":1:1:1100",
]


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with a few bytes replaced, inserted or cut."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["replace", "insert", "cut"]))
        byte = draw(st.integers(0, 255))
        if action == "replace" and position < len(data):
            data[position] = byte
        elif action == "insert":
            data.insert(position, byte)
        else:
            del data[position:position + draw(st.integers(1, 40))]
    return bytes(data)


def _caps() -> st.SearchStrategy[str | bytes]:
    texts = st.text(max_size=120) | st.sampled_from(REAL_CAPS).flatmap(
        lambda cap: mutated(cap.encode()).map(lambda b: b.decode("latin-1")))
    return texts | st.binary(max_size=120) | st.builds(
        lambda prefix, rest: prefix + rest,
        st.sampled_from(["URI:CHK:", "URI:DIR2:", "URI:SSK:", "URI:MDMF:", "URI:LIT:",
                         "URI:CHK-Verifier:", "imm.URI:CHK:", "ro.URI:DIR2:", "URI:DIR2-MDMF:"]),
        st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz234567:0123456789"), max_size=110))


@FUZZ
@given(cap=_caps())
def test_caps(cap: str | bytes) -> None:
    """Any text or bytes either parses as a cap that formats back, or raises CapError."""
    record_fuzz("caps (parse_cap)")
    try:
        parsed = parse_cap(cap)
    except CapError:
        return
    assert parsed is not None


_INI_LINES = st.one_of(
    st.sampled_from(["[node]", "[client]", "[storage]", "[connections]", "[tor]", "[i2p]",
                     "[sftpd]", "[helper]", "[storageclient.plugins.x]", "[", "]", "[[x]]",
                     "nickname = ☃", "tub.port = tcp:0", "tub.port = tcp:99999999999",
                     "tub.location = AUTO", "web.port = tcp:-1:interface=127.0.0.1",
                     "shares.needed = 0", "shares.total = 300", "shares.happy = x",
                     "reserved_space = 99999999999999999999TB", "reserved_space = -5",
                     "enabled = maybe", "expire.enabled = true", "expire.mode = cutoff-date",
                     "expire.cutoff_date = 2020-13-45", "expire.override_lease_duration = 1 lightyear",
                     "introducer.furl = pb://x@y/z", "tcp = tor", "  continued", "# comment",
                     "key", "= value", "a = b # c", "%(x)s = 1"]),
    st.text(max_size=40).map(lambda s: s.replace("\r", "")))


@FUZZ
@given(lines=st.lists(_INI_LINES, max_size=14),
       node_type=st.sampled_from(["client", "introducer"]))
def test_tahoe_cfg(lines: list[str], node_type: str) -> None:
    """Any tahoe.cfg text is read or refused with a ConfigError naming the problem."""
    record_fuzz("tahoe.cfg (parse_config)")
    try:
        parse_config("\n".join(lines) + "\n", "tahoe.cfg", node_type)
    except ConfigError:
        pass


_YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.text(max_size=30)
    | st.sampled_from(["pb://aaaa@tcp:127.0.0.1:1/swiss", "v0-abc", "anonymous-storage-FURL",
                       "ann", "storage", "introducers", "furl", "nickname",
                       "permutation-seed-base32", "anonymous-storage-NURLs"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["storage", "introducers", "ann", "furl", "nickname", "v0-abc",
                         "anonymous-storage-FURL", "anonymous-storage-NURLs",
                         "permutation-seed-base32", "x"]) | st.text(max_size=8),
        inner, max_size=4),
    max_leaves=16)


@FUZZ
@given(document=_YAML_VALUES.map(lambda v: yaml.safe_dump(v)) | st.text(max_size=200),
       which=st.sampled_from(["servers", "introducers"]))
def test_yaml_files(document: str, which: str) -> None:
    """Any servers.yaml or introducers.yaml is read or refused with a ConfigError."""
    record_fuzz(f"{which}.yaml")
    parser = parse_servers_yaml if which == "servers" else parse_introducers_yaml
    try:
        parser(document)
    except ConfigError:
        pass


KEY = SigningKey(bytes(range(32)))
SIGNED = sign_announcement({"service-name": "storage", "nickname": "n", "seqnum": 3,
                            "anonymous-storage-FURL": "pb://aaaa@tcp:127.0.0.1:1/swiss",
                            "permutation-seed-base32": "aaaa", "nonce": "x" * 32}, KEY)


@FUZZ
@given(part=st.integers(0, 2), data=st.data())
def test_changed_announcements_never_verify(part: int, data: st.DataObject) -> None:
    """A signed announcement with any part changed is refused (BadAnnouncement), never accepted."""
    record_fuzz("introducer announcements")
    changed = list(SIGNED)
    changed[part] = data.draw(mutated(SIGNED[part]).filter(lambda b: b != SIGNED[part]))
    try:
        verify_announcement(tuple(changed))
    except BadAnnouncement:
        return
    raise AssertionError(f"a changed announcement verified: part {part}")


@FUZZ
@given(value=st.one_of(st.none(), st.integers(), st.binary(max_size=50),
                       st.lists(st.binary(max_size=30) | st.text(max_size=10) | st.none(),
                                max_size=5).map(tuple),
                       st.dictionaries(st.text(max_size=5), st.binary(max_size=5), max_size=3)))
def test_announcement_shapes(value: object) -> None:
    """Anything an introducer sends in place of an announcement is refused cleanly."""
    record_fuzz("introducer announcements")
    try:
        verify_announcement(value)
    except BadAnnouncement:
        return
    raise AssertionError(f"{value!r} verified")


def _real_immutable() -> bytes:
    file = MemoryFile()
    container = ImmutableContainer.create(file, 300, Lease(0, b"r" * 32, b"c" * 32, 1000))
    container.write_share_data(0, bytes(range(256)) + b"x" * 44)
    return bytes(file.read_at(0, file.size()))


def _real_mutable() -> bytes:
    file = MemoryFile()
    container = MutableContainer.create(file, b"n" * 20, b"w" * 32)
    container.write_share_data(0, b"share data " * 30)
    container.add_or_renew_lease(0, b"r" * 32, b"c" * 32, 1000, b"n" * 20, None)
    return bytes(file.read_at(0, file.size()))


IMMUTABLE = _real_immutable()
MUTABLE = _real_mutable()


def _exercise(container: ImmutableContainer | MutableContainer,
              reads: list[tuple[int, int]]) -> None:
    container.leases()
    for offset, length in reads:
        container.read_share_data(offset, length)


@FUZZ
@given(raw=st.binary(max_size=400) | mutated(IMMUTABLE) | mutated(MUTABLE),
       reads=st.lists(st.tuples(st.integers(0, 2 ** 64), st.integers(0, 2 ** 20)), max_size=3))
def test_share_containers_from_disk(raw: bytes, reads: list[tuple[int, int]]) -> None:
    """A share file with any bytes opens (and reads, and lists leases) or raises StorageError,
    as an immutable and as a mutable container."""
    record_fuzz("share containers read from disk")
    for kind in (ImmutableContainer, MutableContainer):
        try:
            _exercise(kind.open(MemoryFile(raw)), reads)
        except StorageError:
            pass


@FUZZ
@given(raw=st.binary(max_size=400), mutable=st.booleans(),
       writekey=st.none() | st.just(b"k" * 16))
def test_directory_contents(raw: bytes, mutable: bool, writekey: bytes | None) -> None:
    """Directory contents from a server (any bytes) unpack or raise a DirnodeError."""
    record_fuzz("directory contents")
    try:
        unpack_directory(raw, writekey, mutable=mutable)
    except DirnodeError:
        pass


def test_a_short_immutable_header_is_a_storage_error() -> None:
    """A container file cut inside its 12-byte header is refused, not a ``struct.error``."""
    for size in range(12):
        try:
            ImmutableContainer.open(MemoryFile(IMMUTABLE[:size]))
        except StorageError:
            continue
        except struct.error as error:  # pragma: no cover - the failure this guards against
            raise AssertionError(f"{size} bytes: {error!r}") from None
        raise AssertionError(f"a {size}-byte file opened as a container")
