"""Secrets of a mutable file, all derived from its RSA key pair (``reference/mutable-dirnodes.md`` §2.2).

The chain runs one way: private key DER -> writekey -> readkey -> storage
index; the public key DER gives the fingerprint. Data keys come from a
salt (the SDMF IV or an MDMF segment salt) and the readkey; write enablers
from the writekey and a server's 20-byte tub id.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

from attrs import frozen

from ..caps.mutable import (MDMFWriteCap, MutableFormat, SSKWriteCap, readkey_from_writekey,
                            storage_index_from_readkey)
from ..crypto.aes import aes_ctr
from ..crypto.rsa import BadRSAKey, SigningKey, VerifyingKey
from ..util.hashutil import tagged_hash, tagged_pair_hash
from .errors import BadPrivateKey

WRITEKEY_TAG = b"allmydata_mutable_privkey_to_writekey_v1"
READKEY_TAG = b"allmydata_mutable_writekey_to_readkey_v1"
STORAGE_INDEX_TAG = b"allmydata_mutable_readkey_to_storage_index_v1"
PUBKEY_TAG = b"allmydata_mutable_pubkey_to_fingerprint_v1"
DATAKEY_TAG = b"allmydata_mutable_readkey_to_datakey_v1"
WRITE_ENABLER_MASTER_TAG = b"allmydata_mutable_writekey_to_write_enabler_master_v1"
WRITE_ENABLER_TAG = b"allmydata_mutable_write_enabler_master_and_nodeid_to_write_enabler_v1"

KEY_SIZE = 16
SALT_SIZE = 16
TUBID_SIZE = 20

__all__ = ["writekey_from_private_key", "readkey_from_writekey", "storage_index_from_readkey",
           "fingerprint_from_public_key", "data_key", "write_enabler_master", "write_enabler",
           "encrypt_private_key", "decrypt_private_key_der", "decrypt_private_key",
           "MutableKeys"]


def writekey_from_private_key(private_key_der: bytes) -> bytes:
    """The 16-byte writekey: a hash of the exact PKCS#8 DER bytes of the private key."""
    return tagged_hash(WRITEKEY_TAG, private_key_der, KEY_SIZE)


def fingerprint_from_public_key(public_key_der: bytes) -> bytes:
    """The 32-byte fingerprint (verification key hash) of a SubjectPublicKeyInfo DER."""
    return tagged_hash(PUBKEY_TAG, public_key_der)


def data_key(salt: bytes, readkey: bytes) -> bytes:
    """The 16-byte AES key of one SDMF version (salt = IV) or one MDMF segment.

    The salt comes first in the hash, the readkey second.
    """
    return tagged_pair_hash(DATAKEY_TAG, salt, readkey, KEY_SIZE)


def write_enabler_master(writekey: bytes) -> bytes:
    """The 32-byte secret from which every server's write enabler is derived."""
    return tagged_hash(WRITE_ENABLER_MASTER_TAG, writekey)


def write_enabler(master: bytes, server_tubid: bytes) -> bytes:
    """The 32-byte write enabler presented to one server.

    :param server_tubid: the server's 20-byte binary Foolscap tub id.
    :raises ValueError: if the tub id is not 20 bytes.
    """
    if len(server_tubid) != TUBID_SIZE:
        raise ValueError(f"a tub id is {TUBID_SIZE} bytes, not {len(server_tubid)}")
    return tagged_pair_hash(WRITE_ENABLER_TAG, master, server_tubid)


def encrypt_private_key(writekey: bytes, private_key_der: bytes) -> bytes:
    """AES-CTR (key = writekey, counter from 0) of the private key DER, as stored in shares."""
    return aes_ctr(writekey, private_key_der)


def decrypt_private_key_der(writekey: bytes, encrypted: bytes) -> bytes:
    """Decrypt a share's encrypted private key and check that it hashes to the writekey.

    Cheap (no RSA parsing): enough to verify a share.

    :returns: the PKCS#8 DER bytes.
    :raises BadPrivateKey: if they do not hash to ``writekey``.
    """
    der = aes_ctr(writekey, encrypted)
    if writekey_from_private_key(der) != writekey:
        raise BadPrivateKey("the encrypted private key does not match the writekey")
    return der


def decrypt_private_key(writekey: bytes, encrypted: bytes) -> SigningKey:
    """Decrypt a share's encrypted private key and load it (about 30 ms: RSA checks).

    :returns: the signing key, holding the decrypted DER bytes verbatim.
    :raises BadPrivateKey: if the bytes do not hash to ``writekey`` or are
        not a usable RSA-2048 key.
    """
    der = decrypt_private_key_der(writekey, encrypted)
    try:
        return SigningKey.from_der(der)
    except BadRSAKey as error:
        raise BadPrivateKey(f"the private key matches the writekey but is unusable: {error}") \
            from None


@frozen
class MutableKeys:
    """Every secret of one mutable file, derived once from its key pair.

    :ivar signing_key: the private key (holding its DER verbatim).
    :ivar verifying_key: the public key (SubjectPublicKeyInfo DER).
    """

    signing_key: SigningKey
    verifying_key: VerifyingKey
    writekey: bytes
    readkey: bytes
    storage_index: bytes
    fingerprint: bytes

    @classmethod
    def from_signing_key(cls, signing_key: SigningKey) -> "MutableKeys":
        """Derive everything from a private key."""
        verifying_key = signing_key.verifying_key()
        writekey = writekey_from_private_key(signing_key.der)
        readkey = readkey_from_writekey(writekey)
        return cls(signing_key, verifying_key, writekey, readkey,
                   storage_index_from_readkey(readkey),
                   fingerprint_from_public_key(verifying_key.der))

    @property
    def encrypted_private_key(self) -> bytes:
        """The private key as stored in every share."""
        return encrypt_private_key(self.writekey, self.signing_key.der)

    @property
    def write_enabler_master(self) -> bytes:
        """The write-enabler master secret."""
        return write_enabler_master(self.writekey)

    def write_enabler(self, server_tubid: bytes) -> bytes:
        """The write enabler for the server with this 20-byte tub id."""
        return write_enabler(self.write_enabler_master, server_tubid)

    def write_cap(self, file_format: MutableFormat) -> SSKWriteCap | MDMFWriteCap:
        """The file's write cap in the given format (URI:SSK or URI:MDMF)."""
        cls = SSKWriteCap if file_format is MutableFormat.SDMF else MDMFWriteCap
        return cls(self.writekey, self.fingerprint)
