"""Text encodings and hashes shared by every format: base32, netstrings, tagged hashes."""
__all__ = ["base32", "netstring", "hashutil", "mathutil", "errors"]
