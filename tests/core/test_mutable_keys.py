"""Every secret derived from a mutable file's key pair, against mutable-keys.json."""
from __future__ import annotations

import pytest

from tahoe.caps.mutable import MutableFormat
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.crypto.rsa import SigningKey
from tahoe.mutable import keys as mkeys
from tahoe.mutable.errors import BadPrivateKey
from tahoe.mutable.keys import MutableKeys
from tests.vectors import load

VECTORS = load("mutable-keys.json")
CASES = {"fixed": VECTORS["fixed_key"], "legacy": VECTORS["legacy_key_e17"]}


def keys_of(case: dict) -> MutableKeys:
    """The key material of one vector key."""
    return MutableKeys.from_signing_key(
        SigningKey.from_der(bytes.fromhex(case["private_key_pkcs8_der_hex"])))


#: The two vector keys, derived once per session (used by the other mutable tests).
FIXED_KEYS = keys_of(CASES["fixed"])
LEGACY_KEYS = keys_of(CASES["legacy"])


def test_tags() -> None:
    """The tag constants are the vectors' tag strings."""
    tags = VECTORS["tags"]
    for name, value in {"MUTABLE_WRITEKEY_TAG": mkeys.WRITEKEY_TAG,
                        "MUTABLE_READKEY_TAG": mkeys.READKEY_TAG,
                        "MUTABLE_STORAGEINDEX_TAG": mkeys.STORAGE_INDEX_TAG,
                        "MUTABLE_PUBKEY_TAG": mkeys.PUBKEY_TAG,
                        "MUTABLE_DATAKEY_TAG": mkeys.DATAKEY_TAG,
                        "MUTABLE_WRITE_ENABLER_MASTER_TAG": mkeys.WRITE_ENABLER_MASTER_TAG,
                        "MUTABLE_WRITE_ENABLER_TAG": mkeys.WRITE_ENABLER_TAG}.items():
        assert tags[name].encode() == value


@pytest.mark.parametrize("name", CASES)
def test_derivations(name: str) -> None:
    """Writekey, readkey, SI, fingerprint, write enablers and encrypted key match the vector."""
    case = CASES[name]
    keys = FIXED_KEYS if name == "fixed" else LEGACY_KEYS
    assert keys.writekey.hex() == case["writekey_hex"]
    assert keys.readkey.hex() == case["readkey_hex"]
    assert keys.storage_index.hex() == case["storage_index_hex"]
    assert keys.fingerprint.hex() == case["fingerprint_hex"]
    assert keys.verifying_key.der.hex() == case["public_key_spki_der_hex"]
    assert keys.write_enabler_master.hex() == case["write_enabler_master_hex"]
    assert keys.encrypted_private_key.hex() == case["encrypted_private_key_hex"]
    for server in case["write_enablers"]:
        tubid = bytes.fromhex(server["server_tubid_hex"])
        assert keys.write_enabler(tubid).hex() == server["write_enabler_hex"]
    der = bytes.fromhex(case["private_key_pkcs8_der_hex"])
    assert mkeys.writekey_from_private_key(der) == keys.writekey
    assert mkeys.readkey_from_writekey(keys.writekey) == keys.readkey
    assert mkeys.storage_index_from_readkey(keys.readkey) == keys.storage_index
    assert keys.write_cap(MutableFormat.SDMF).to_string() == case["caps"]["sdmf_writecap"]
    assert keys.write_cap(MutableFormat.MDMF).to_string() == case["caps"]["mdmf_writecap"]


def test_data_key_example() -> None:
    """The data key puts the salt first and the readkey second."""
    iv = bytes.fromhex("00112233445566778899aabbccddeeff")
    expected = VECTORS["extra_examples"]["ssk_readkey_data_hash(IV=00112233445566778899aabbccddeeff, readkey)"]
    assert mkeys.data_key(iv, FIXED_KEYS.readkey).hex() == expected


def test_lease_secrets_for_the_fixed_key() -> None:
    """The lease-secret chain over the file's storage index matches the vector."""
    case = VECTORS["lease_secrets_for_fixed_key"]
    client = ClientLeaseSecrets.from_lease_secret(bytes.fromhex(case["client_lease_secret_hex"]))
    assert client.renewal.hex() == case["client_renewal_secret_hex"]
    assert client.cancel.hex() == case["client_cancel_secret_hex"]
    for server in case["per_server"]:
        secrets = client.for_server(FIXED_KEYS.storage_index,
                                    bytes.fromhex(server["server_tubid_hex"]))
        assert secrets.renew.hex() == server["renew_secret_hex"]
        assert secrets.cancel.hex() == server["cancel_secret_hex"]


@pytest.mark.parametrize("keys", [FIXED_KEYS, LEGACY_KEYS], ids=["fixed", "legacy"])
def test_private_key_round_trip(keys: MutableKeys) -> None:
    """The encrypted private key decrypts to the same DER bytes under the writekey only."""
    recovered = mkeys.decrypt_private_key(keys.writekey, keys.encrypted_private_key)
    assert recovered.der == keys.signing_key.der
    with pytest.raises(BadPrivateKey):
        mkeys.decrypt_private_key(bytes(16), keys.encrypted_private_key)
    damaged = bytearray(keys.encrypted_private_key)
    damaged[100] ^= 1
    with pytest.raises(BadPrivateKey):
        mkeys.decrypt_private_key(keys.writekey, bytes(damaged))


def test_write_enabler_needs_a_tubid() -> None:
    """A server id that is not 20 bytes is refused."""
    with pytest.raises(ValueError):
        FIXED_KEYS.write_enabler(b"short")
