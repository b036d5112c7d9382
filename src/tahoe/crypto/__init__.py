"""Cryptographic primitives over pycryptodome and hashlib, and lease-secret derivation."""
__all__ = ["aes", "lease_secrets"]
