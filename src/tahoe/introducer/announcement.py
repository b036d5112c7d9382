"""Signed introducer announcements: build, sign, verify, keep; permutation seeds.

Follows ``storage-protocol.md`` §7.2–7.4 and §8.1 (see
``docs/formats/announcements.md``):

* an announcement is a JSON object whose keys come in Tahoe's order (§7.3);
* it travels as ``(msg, b"v0-" + base32(sig), b"v0-" + base32(pubkey))``
  where ``msg`` is ``json.dumps`` with Python's defaults, as UTF-8 (§7.4);
* a receiver verifies the signature over ``msg`` as received and then keeps
  one announcement per (service name, server id), refusing replays (§7.2);
* a storage server announces ``permutation-seed-base32``; a client turns it
  (or its absence) into the bytes that place the server on the ring (§7.3).

Pure: the caller passes in the node's key, the sequence number and the
random nonce bytes.
"""
from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from ..crypto.ed25519 import (PUBLIC_KEY_SIZE, SERVER_ID_PREFIX, BadKeyString, SigningKey,
                              VerifyingKey, parse_server_id)
from ..util import base32
from ..util.errors import BadBase32, BadFURL
from ..util.furl import parse_furl, tubid_to_bytes
from .errors import (BadAnnouncementBody, BadAnnouncementKey, BadPermutationSeed,
                     IncompatibleIntroducer, InvalidSignature, MalformedAnnouncement,
                     MissingServiceName, UnsignedAnnouncement)

#: What Tahoe 1.20 puts in ``my-version`` and ``application-version``.
APP_VERSION = "tahoe-lafs/1.20.0"
#: What Tahoe 1.20 puts in ``oldest-supported``.
OLDEST_SUPPORTED = "1.0.0"
STORAGE_SERVICE = "storage"
#: The key an introducer's ``get_version`` answer must carry.
INTRODUCER_V2 = b"http://allmydata.org/tahoe/protocols/introducer/v2"
#: Random bytes in a nonce (52 base32 characters).
NONCE_SIZE = 32
SIGNED_PREFIX = b"v0-"

#: The signed 3-tuple sent with ``publish_v2`` and ``announce_v2``.
AnnouncementTuple = tuple[bytes, bytes, bytes]

# What Tahoe's client accepts as a server id with a key it can decode (§7.3).
_V0_SERVER_ID = re.compile(r"\Av0-[0-9a-zA-Z]{52}\Z")
# What Tahoe's client requires of anonymous-storage-FURL (§7.3).
_USABLE_FURL = re.compile(r"\Apb://\w+@")


# ---------------------------------------------------------------- building

def node_fields(nickname: str, *, my_version: str = APP_VERSION,
                oldest_supported: str = OLDEST_SUPPORTED) -> dict[str, Any]:
    """The fields every announcement and ``subscriber_info`` start with, in order.

    ``version`` (0), ``nickname``, ``app-versions`` (empty), ``my-version``,
    ``oldest-supported``.
    """
    return {
        "version": 0,
        "nickname": nickname,
        "app-versions": [],
        "my-version": my_version,
        "oldest-supported": oldest_supported,
    }


def build_announcement(service_name: str, service_fields: Mapping[str, Any], *, nickname: str,
                       seqnum: int, nonce: bytes, my_version: str = APP_VERSION,
                       oldest_supported: str = OLDEST_SUPPORTED) -> dict[str, Any]:
    """An announcement dict in Tahoe's key order (§7.3).

    Node fields, ``service-name``, the service's own fields in the order
    given, then ``seqnum`` and ``nonce`` (base32 of ``nonce``).

    :param seqnum: a non-negative int; Tahoe starts at 1 and adds 1 per publication.
    :param nonce: :data:`NONCE_SIZE` fresh random bytes.
    :raises ValueError: on a negative or non-int seqnum or a nonce of the wrong size.
    """
    if not isinstance(seqnum, int) or isinstance(seqnum, bool) or seqnum < 0:
        raise ValueError(f"seqnum must be a non-negative int, not {seqnum!r}")
    if not isinstance(nonce, bytes) or len(nonce) != NONCE_SIZE:
        raise ValueError(f"nonce must be {NONCE_SIZE} random bytes")
    ann = node_fields(nickname, my_version=my_version, oldest_supported=oldest_supported)
    ann["service-name"] = service_name
    ann.update(service_fields)
    ann["seqnum"] = seqnum
    ann["nonce"] = base32.b2a(nonce)
    return ann


def storage_announcement(*, nickname: str, furl: str, permutation_seed_base32: str, seqnum: int,
                         nonce: bytes, nurls: Sequence[str] = (), my_version: str = APP_VERSION,
                         oldest_supported: str = OLDEST_SUPPORTED,
                         grid_manager_certificates: Sequence[Mapping[str, str]] | None = None,
                         ) -> dict[str, Any]:
    """The ``storage`` announcement of a server.

    :param furl: the FURL of the ``RIStorageServer`` object.
    :param nurls: the HTTPS storage NURLs; none for a Foolscap-only server (the
        key is then left out, as Tahoe 1.20 leaves it out with
        ``[storage]force_foolscap``).
    :param permutation_seed_base32: from :func:`announced_permutation_seed`
        (or :func:`tubid_permutation_seed` for a server that had shares before).
    :param grid_manager_certificates: with ``[storage] grid_management`` on, the
        signed certificates (``docs/formats/grid-manager.md``), announced under
        ``grid-manager-certificates`` (an empty list too, as 1.20); None leaves the key out.
    :raises BadFURL: if ``furl`` is not a FURL a Tahoe client would use.
    :raises ValueError: as :func:`build_announcement`.
    """
    parse_furl(furl)
    if not _USABLE_FURL.match(furl):
        raise BadFURL(f"Tahoe clients ignore a storage FURL like {furl!r:.80}")
    fields: dict[str, Any] = {"permutation-seed-base32": permutation_seed_base32}
    if nurls:
        fields["anonymous-storage-NURLs"] = list(nurls)
    fields["anonymous-storage-FURL"] = furl
    if grid_manager_certificates is not None:
        fields["grid-manager-certificates"] = [dict(c) for c in grid_manager_certificates]
    return build_announcement(STORAGE_SERVICE, fields, nickname=nickname, seqnum=seqnum,
                              nonce=nonce, my_version=my_version,
                              oldest_supported=oldest_supported)


def subscriber_info(nickname: str, *, my_version: str = APP_VERSION,
                    oldest_supported: str = OLDEST_SUPPORTED) -> dict[bytes, Any]:
    """The ``subscriber_info`` of ``subscribe_v2``: bytes keys, ``str``/int/list values (§7.2)."""
    fields = node_fields(nickname, my_version=my_version, oldest_supported=oldest_supported)
    return {name.encode("ascii"): value for name, value in fields.items()}


def introducer_version(application_version: bytes = APP_VERSION.encode("ascii")
                       ) -> dict[bytes, Any]:
    """An introducer's ``get_version`` answer: bytes keys only, with the v2 key (§7.1)."""
    return {INTRODUCER_V2: {}, b"application-version": application_version}


def check_introducer_version(version: object) -> None:
    """Apply a 1.20 client's test to an introducer's ``get_version`` answer.

    :raises IncompatibleIntroducer: unless it is a dict whose keys are all
        bytes and which has the :data:`INTRODUCER_V2` key.
    """
    if not isinstance(version, dict):
        raise IncompatibleIntroducer("get_version did not return a dict")
    if not all(isinstance(key, bytes) for key in version):
        raise IncompatibleIntroducer("get_version returned a non-bytes key")
    if INTRODUCER_V2 not in version:
        raise IncompatibleIntroducer("the introducer does not speak the v2 protocol")


# ---------------------------------------------------------------- signing

def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    raise TypeError(f"cannot put a {type(value).__name__} in an announcement")


def encode_announcement(ann: Mapping[str, Any]) -> bytes:
    """The exact bytes Tahoe signs: ``json.dumps`` with Python's defaults, as UTF-8.

    Keys stay in insertion order, separators are ``", "`` and ``": "``,
    non-ASCII becomes ``\\uXXXX``. Bytes values are decoded as UTF-8 and sets
    become lists (sorted here, so the bytes do not depend on the hash seed;
    Tahoe's own order is its set iteration order, which verifiers never see).

    :raises TypeError: on a value JSON cannot hold.
    :raises UnicodeDecodeError: on a bytes value that is not UTF-8.
    """
    return json.dumps(dict(ann), default=_json_default).encode("utf-8")


def sign_announcement(ann: Mapping[str, Any], key: SigningKey) -> AnnouncementTuple:
    """Sign an announcement into the 3-tuple of bytes sent to the introducer (§7.4).

    :returns: ``(msg, b"v0-" + base32(signature), b"v0-" + base32(public key))``.
    """
    message = encode_announcement(ann)
    signature = key.sign(message)
    return (message, SIGNED_PREFIX + base32.b2a_bytes(signature),
            key.public_key.server_id.encode("ascii"))


# ---------------------------------------------------------------- verifying

@frozen
class VerifiedAnnouncement:
    """An announcement whose signature has been checked, with its decoded fields.

    :ivar announcement: the decoded JSON object (not to be mutated).
    :ivar server_id: ``v0-`` and the base32 key that signed it.
    :ivar message: the signed bytes, as received.
    :ivar signature: the 64-byte signature.
    """

    announcement: dict[str, Any]
    server_id: str
    message: bytes = field(repr=False)
    signature: bytes = field(repr=False)

    @property
    def service_name(self) -> str:
        """The ``service-name`` field (always present and a string)."""
        name: str = self.announcement["service-name"]
        return name

    @property
    def seqnum(self) -> int | None:
        """The ``seqnum`` field if it is an int, else ``None``."""
        return _seqnum(self.announcement)

    @property
    def nickname(self) -> str:
        """The ``nickname`` field, or ``""`` when missing or not a string."""
        nickname = self.announcement.get("nickname", "")
        return nickname if isinstance(nickname, str) else ""

    def as_tuple(self) -> AnnouncementTuple:
        """The signed 3-tuple again, as an introducer relays it."""
        return (self.message, SIGNED_PREFIX + base32.b2a_bytes(self.signature),
                self.server_id.encode("ascii"))


def _split_signed(value: bytes, what: str) -> bytes:
    if not value:
        raise UnsignedAnnouncement(f"the announcement has no {what}")
    if not value.startswith(SIGNED_PREFIX):
        raise UnsignedAnnouncement(f"the {what} does not start with 'v0-'")
    return value[len(SIGNED_PREFIX):]


def verify_announcement(ann_t: object) -> VerifiedAnnouncement:
    """Check a received 3-tuple and decode its announcement (§7.4).

    The order of checks is Tahoe's: both strings carry ``v0-``, the key
    decodes, the signature verifies over the message exactly as received;
    only then is the message parsed as JSON.

    :param ann_t: ``(msg, sig, key)``; a tuple or list of three values.
    :raises MalformedAnnouncement: if it is not three values, or the message is not bytes.
    :raises UnsignedAnnouncement: if the signature or key is missing or not ``v0-``.
    :raises BadAnnouncementKey: if the key is not a base32 Ed25519 public key.
    :raises InvalidSignature: if the signature does not verify.
    :raises BadAnnouncementBody: if the message is not UTF-8 JSON for an object.
    :raises MissingServiceName: if it has no ``service-name`` string.
    """
    if not isinstance(ann_t, (tuple, list)) or len(ann_t) != 3:
        raise MalformedAnnouncement("an announcement is a tuple (msg, signature, key)")
    message, signature_field, key_field = ann_t
    if not isinstance(message, bytes):
        raise MalformedAnnouncement("the announcement message must be bytes")
    for value, what in ((signature_field, "signature"), (key_field, "key")):
        if value is not None and not isinstance(value, bytes):
            raise MalformedAnnouncement(f"the announcement {what} must be bytes")
    signature_b32 = _split_signed(signature_field or b"", "signature")
    _split_signed(key_field or b"", "key")
    try:
        key = parse_server_id(key_field)
    except BadKeyString as e:
        raise BadAnnouncementKey(str(e)) from None
    try:
        signature = base32.a2b(signature_b32)
    except BadBase32:
        raise InvalidSignature("the signature is not base32") from None
    if not key.is_valid_signature(message, signature):
        raise InvalidSignature(f"bad signature by {key.server_id}")
    return VerifiedAnnouncement(decode_message(message), key.server_id, message, signature)


def decode_message(message: bytes) -> dict[str, Any]:
    """Parse a signed message into its announcement dict.

    :raises BadAnnouncementBody: if it is not UTF-8 JSON for an object.
    :raises MissingServiceName: if it has no ``service-name`` string.
    """
    try:
        ann = json.loads(message.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadAnnouncementBody("the announcement is not UTF-8 JSON") from None
    if not isinstance(ann, dict):
        raise BadAnnouncementBody("the announcement is not a JSON object")
    if not isinstance(ann.get("service-name"), str):
        raise MissingServiceName("the announcement has no service-name")
    return ann


# ---------------------------------------------------------------- permutation seeds

def announced_permutation_seed(public_key: VerifyingKey) -> str:
    """What a new 1.20 server announces: base32 of the base32 *text* of its key (84 chars)."""
    return base32.b2a(base32.b2a_bytes(public_key.raw))


def tubid_permutation_seed(tubid: str) -> str:
    """What a server that already held shares announces: base32 of the binary tub id (32 chars).

    :raises BadFURL: if ``tubid`` is not a tub id.
    """
    return base32.b2a(tubid_to_bytes(tubid))


def permutation_seed(ann: Mapping[str, Any], server_id: str) -> bytes:
    """The seed bytes a 1.20 client hashes with the storage index for this server.

    ``permutation-seed-base32`` decoded when present (52 ASCII bytes for the
    84-character form, 20 bytes for the tub-id form). Without it: the raw 32
    key bytes when ``server_id`` looks like ``v0-`` and 52 base32 characters,
    otherwise SHA-256 of the server id's UTF-8 bytes. (Tahoe 1.20 fails on a
    ``v0-`` id that matches its pattern but is not canonical base32; we fall
    back to SHA-256 for it.)

    :raises BadPermutationSeed: if the announced value is not canonical base32 text.
    """
    if "permutation-seed-base32" in ann:
        announced = ann["permutation-seed-base32"]
        if not isinstance(announced, (str, bytes)):
            raise BadPermutationSeed("permutation-seed-base32 is not a string")
        try:
            return base32.a2b(announced)
        except BadBase32:
            raise BadPermutationSeed("permutation-seed-base32 is not base32") from None
    if _V0_SERVER_ID.match(server_id):
        try:
            raw = base32.a2b(server_id[len(SERVER_ID_PREFIX):])
        except BadBase32:
            pass
        else:
            if len(raw) == PUBLIC_KEY_SIZE:
                return raw
    return hashlib.sha256(server_id.encode("utf-8")).digest()


# ---------------------------------------------------------------- acceptance

def _seqnum(ann: Mapping[str, Any]) -> int | None:
    value = ann.get("seqnum")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


class Verdict(enum.Enum):
    """What becomes of an announcement offered to an :class:`AnnouncementTable`."""

    NEW = "new"
    REPLACED = "replaced"
    IDENTICAL = "identical"
    STALE = "stale"

    @property
    def changed(self) -> bool:
        """True when the table takes the announcement (new or replacing)."""
        return self in (Verdict.NEW, Verdict.REPLACED)


def judge(old: VerifiedAnnouncement | None, new: VerifiedAnnouncement) -> Verdict:
    """The §7.2 rule for an announcement from the same server for the same service.

    * nothing stored: :attr:`Verdict.NEW`;
    * same decoded fields as the stored one: :attr:`Verdict.IDENTICAL` (ignored);
    * the stored one has a ``seqnum`` key and the new one lacks an int
      ``seqnum`` strictly greater (a stored value that is not an int cannot
      be compared; any int then passes): :attr:`Verdict.STALE` (ignored);
    * otherwise :attr:`Verdict.REPLACED`.
    """
    if old is None:
        return Verdict.NEW
    if old.announcement == new.announcement:
        return Verdict.IDENTICAL
    if "seqnum" in old.announcement:
        old_seqnum, new_seqnum = old.seqnum, new.seqnum
        if new_seqnum is None or (old_seqnum is not None and new_seqnum <= old_seqnum):
            return Verdict.STALE
    return Verdict.REPLACED


class AnnouncementTable:
    """Announcements kept by an introducer or a client: one per (service name, server id).

    Holds only verified announcements and applies :func:`judge` to each
    offer. Nothing is ever forgotten (an introducer keeps announcements
    after the publisher disconnects).
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], VerifiedAnnouncement] = {}

    def offer(self, ann: VerifiedAnnouncement) -> bool:
        """Store ``ann`` if §7.2 lets it in; return whether the table changed."""
        return self.consider(ann).changed

    def consider(self, ann: VerifiedAnnouncement) -> Verdict:
        """Like :meth:`offer`, but say why (new, replaced, identical or stale)."""
        slot = (ann.service_name, ann.server_id)
        verdict = judge(self._entries.get(slot), ann)
        if verdict.changed:
            self._entries[slot] = ann
        return verdict

    def get(self, service_name: str, server_id: str) -> VerifiedAnnouncement | None:
        """The stored announcement of one server for one service, if any."""
        return self._entries.get((service_name, server_id))

    def for_service(self, service_name: str) -> list[VerifiedAnnouncement]:
        """Every stored announcement of a service, in the order servers first appeared."""
        return [ann for (name, _), ann in self._entries.items() if name == service_name]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[VerifiedAnnouncement]:
        return iter(list(self._entries.values()))
