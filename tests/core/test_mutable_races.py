"""Reading one version of a mutable file while its shares are being replaced by newer ones.

A retrieve chooses a version from its servermap and then reads whole shares;
a write in between leaves shares of another version where it looked. Those
are set aside as replaced (the reader updates its servermap and reads again),
never counted corrupt; a share still claiming the chosen version that fails a
check, or a replaced one whose signature fails, is corrupt.
"""
from __future__ import annotations

import pytest

from tahoe.caps.mutable import MutableFormat
from tahoe.mutable.errors import NotEnoughShares
from tahoe.mutable.reader import decode_shares
from tests.core.test_mutable_keys import FIXED_KEYS
from tests.core.test_mutable_versions import publish


def read(shares: dict[int, bytes], version: object) -> object:
    """``decode_shares`` of one version with the fixed test keys."""
    return decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares,
                         version)  # type: ignore[arg-type]


@pytest.mark.parametrize("file_format", list(MutableFormat))
def test_shares_of_a_newer_version_are_replaced_not_corrupt(file_format: MutableFormat) -> None:
    """Shares read after a write hold the next version (whole, or cut where the chosen
    version's share ended, as a retrieve reads them): set aside as replaced."""
    old = publish(b"old " * 1500, file_format, 3, 6, seqnum=4, seed=1)
    new = publish(b"new " * 3000, file_format, 3, 6, seqnum=5, seed=2)
    old_shares = {s.shnum: s.data for s in old.shares}
    new_shares = {s.shnum: s.data for s in new.shares}
    eof = old.version.offsets[-1]
    assert len(new_shares[0]) > eof

    mixed = {0: new_shares[0], 1: new_shares[1][:eof], 2: old_shares[2], 3: old_shares[3]}
    with pytest.raises(NotEnoughShares) as info:
        read(mixed, old.version)
    assert info.value.found == 2 and info.value.bad == {}
    assert info.value.replaced == {0, 1}
    assert "another version" in str(info.value)

    mixed[4] = old_shares[4]
    result = read(mixed, old.version)
    assert result.plaintext == b"old " * 1500  # type: ignore[attr-defined]
    assert result.corrupt == {} and result.used == (2, 3, 4)  # type: ignore[attr-defined]


def test_a_newer_share_cut_before_its_signature_is_replaced() -> None:
    """Cut so short that its key and signature are missing, a share whose checkstring is
    another version's is still only replaced; one of the chosen version is corrupt."""
    old = publish(b"a" * 9000, MutableFormat.SDMF, 3, 6, seqnum=7, seed=3)
    new = publish(b"b" * 9000, MutableFormat.SDMF, 3, 6, seqnum=8, seed=4)
    shares = {0: new.shares[0].data[:200], 1: old.shares[1].data[:200],
              2: old.shares[2].data, 3: old.shares[3].data}
    with pytest.raises(NotEnoughShares) as info:
        read(shares, old.version)
    assert info.value.replaced == {0}
    assert set(info.value.bad) == {1}


def test_a_newer_share_with_a_bad_signature_is_corrupt() -> None:
    """Another version's checkstring does not excuse a signature that fails."""
    old = publish(b"a" * 9000, MutableFormat.SDMF, 3, 6, seqnum=7, seed=5)
    new = publish(b"b" * 9000, MutableFormat.SDMF, 3, 6, seqnum=8, seed=6)
    forged = bytearray(new.shares[0].data)
    forged[8] ^= 0x01  # inside the root hash: the signature no longer matches
    shares = {0: bytes(forged), 1: old.shares[1].data, 2: old.shares[2].data}
    with pytest.raises(NotEnoughShares) as info:
        read(shares, old.version)
    assert info.value.replaced == frozenset()
    assert "signature" in info.value.bad[0]


def test_a_share_claiming_the_version_with_other_offsets_is_corrupt() -> None:
    """The chosen version's checkstring with a changed (unsigned) offset table: corrupt."""
    old = publish(b"abc" * 10, MutableFormat.SDMF, 1, 3, seed=7)
    damaged = bytearray(old.shares[0].data)
    damaged[86] ^= 0x02  # o_share_data
    with pytest.raises(NotEnoughShares) as info:
        read({0: bytes(damaged)}, old.version)
    assert info.value.replaced == frozenset() and 0 in info.value.bad
    result = read({0: bytes(damaged), 1: old.shares[1].data}, old.version)
    assert result.plaintext == b"abc" * 10 and 0 in result.corrupt  # type: ignore[attr-defined]
