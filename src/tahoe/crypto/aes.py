"""AES-128 in CTR mode as Tahoe uses it (``reference/immutable.md`` §3.4).

The counter block is one 128-bit big-endian integer starting at zero for
file offset 0; keystream block i covers bytes 16i..16i+15 of the file.

Computed by ``cryptography`` (OpenSSL), which Twisted loads anyway for TLS:
a node that only stores shares loads no second crypto library (pycryptodome
is left to the RSA of mutable files).
"""
from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

KEY_SIZE = 16
_BLOCK = 16


class AESCTRStream:
    """A keystream positioned at a byte offset of the file; ``process`` en- or decrypts.

    :param key: the 16-byte (AES-128) or 32-byte (AES-256, mutable files) key.
    :param offset: the file offset of the first byte that will be processed.
    """

    __slots__ = ("_encryptor",)

    def __init__(self, key: bytes, offset: int = 0) -> None:
        if len(key) not in (16, 32):
            raise ValueError(f"AES key must be 16 or 32 bytes, not {len(key)}")
        if offset < 0:
            raise ValueError("offset must be non-negative")
        block, skip = divmod(offset, _BLOCK)
        counter = block.to_bytes(_BLOCK, "big")  # the whole block is the counter
        self._encryptor = Cipher(algorithms.AES(key), modes.CTR(counter)).encryptor()
        if skip:
            self._encryptor.update(bytes(skip))

    def process(self, data: bytes | memoryview) -> bytes:
        """Encrypt or decrypt the next ``len(data)`` bytes of the stream."""
        return self._encryptor.update(data)


def aes_ctr(key: bytes, data: bytes | memoryview, offset: int = 0) -> bytes:
    """En- or decrypt ``data`` that sits at byte ``offset`` of the file."""
    return AESCTRStream(key, offset).process(data)
