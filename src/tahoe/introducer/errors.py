"""Errors raised on malformed, unsigned or badly signed announcements."""
from __future__ import annotations


class IntroducerError(ValueError):
    """Root of every error of the introducer layer."""


class BadAnnouncement(IntroducerError):
    """A received announcement must be refused; subclasses say why."""


class MalformedAnnouncement(BadAnnouncement):
    """The announcement is not a 3-tuple of bytes (message, signature, key)."""


class UnsignedAnnouncement(BadAnnouncement):
    """The signature or key is missing, or lacks the ``v0-`` prefix.

    Tahoe 1.20 raises on these (aborting the rest of an ``announce_v2``
    batch), while it only logs and skips a bad signature.
    """


class BadAnnouncementKey(BadAnnouncement):
    """The ``v0-`` key is not base32 of a 32-byte Ed25519 public key."""


class InvalidSignature(BadAnnouncement):
    """The signature does not verify over the message as received."""


class BadAnnouncementBody(BadAnnouncement):
    """The signed message is not UTF-8 JSON for an object."""


class MissingServiceName(BadAnnouncementBody):
    """The announcement has no ``service-name`` string."""


class BadPermutationSeed(BadAnnouncementBody):
    """``permutation-seed-base32`` is present but not canonical base32."""


class IncompatibleIntroducer(IntroducerError):
    """An introducer's ``get_version`` answer lacks the v2 protocol or has non-bytes keys."""
