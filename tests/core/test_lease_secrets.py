"""Lease renewal and cancel secrets follow Tahoe's derivation chain."""
from __future__ import annotations

import pytest

from tahoe.crypto import lease_secrets as ls
from tests.vectors import load

VECTORS = load("immutable-lease-secrets.json")["vectors"]


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: c["lease_secret_hex"][:8])
def test_lease_secret_chain(case: dict) -> None:
    """Every step of the client, file and bucket secrets equals the vector."""
    secret = bytes.fromhex(case["lease_secret_hex"])
    si = bytes.fromhex(case["storage_index_hex"])
    seed = bytes.fromhex(case["server_lease_seed_hex"])
    client = ls.ClientLeaseSecrets.from_lease_secret(secret)
    assert client.renewal.hex() == case["client_renewal_secret_hex"]
    assert client.cancel.hex() == case["client_cancel_secret_hex"]
    assert ls.file_renewal_secret(client.renewal, si).hex() == case["file_renewal_secret_hex"]
    assert ls.file_cancel_secret(client.cancel, si).hex() == case["file_cancel_secret_hex"]
    sent = client.for_server(si, seed)
    assert sent.renew.hex() == case["bucket_renewal_secret_hex"]
    assert sent.cancel.hex() == case["bucket_cancel_secret_hex"]


def test_lease_seed_must_be_20_bytes() -> None:
    """A lease seed that is not a 20-byte tub id is refused."""
    client = ls.ClientLeaseSecrets.from_lease_secret(bytes(32))
    with pytest.raises(ValueError):
        client.for_server(bytes(16), bytes(19))
