"""Errors raised by the encoding helpers."""


class EncodingError(ValueError):
    """Root of the errors raised when decoding malformed text or bytes."""


class BadBase32(EncodingError):
    """The text is not canonical Tahoe base32 (wrong alphabet, length or trailing bits)."""


class BadNetstring(EncodingError):
    """The bytes are not a well-formed netstring."""


class BadFURL(EncodingError):
    """The text is not a well-formed Foolscap FURL (or its tub id or hints are malformed)."""


class BadNURL(EncodingError):
    """The text is not a well-formed NURL (HTTPS storage address with a pinned key)."""
