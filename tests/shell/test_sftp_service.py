"""The SFTP frontend's set-up: host keys made when missing, accounts checked at start."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tahoe.frontends.sftp_service import SFTPFrontendError, load_host_key, read_accounts

DIR = "URI:DIR2:" + "a" * 26 + ":" + "b" * 51 + "a"


def test_missing_host_key_is_made_and_kept(tmp_path: Path) -> None:
    """Without key files an Ed25519 pair is written (private 0600) and used again later."""
    public, private = tmp_path / "private" / "host.pub", tmp_path / "private" / "host"
    first = load_host_key(str(public), str(private))
    assert first[0].sshType() == b"ssh-ed25519" and first[1].isPublic() is False
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert public.read_bytes().startswith(b"ssh-ed25519 ")
    again = load_host_key(str(public), str(private))
    assert again[0] == first[0]


def test_unusable_keys_and_accounts_are_refused(tmp_path: Path) -> None:
    """A junk host key, a missing accounts file or an unreadable public key stops the
    frontend with a message naming the file."""
    (tmp_path / "host").write_text("not a key")
    (tmp_path / "host.pub").write_text("not a key either")
    with pytest.raises(SFTPFrontendError, match="cannot read the SFTP host key"):
        load_host_key(str(tmp_path / "host.pub"), str(tmp_path / "host"))
    with pytest.raises(SFTPFrontendError, match="cannot read the SFTP accounts file"):
        read_accounts(str(tmp_path / "missing"))
    (tmp_path / "accounts").write_text(f"alice ssh-ed25519 AAAAnotbase64!! {DIR}\n")
    with pytest.raises(SFTPFrontendError, match="account 'alice' has a public key"):
        read_accounts(str(tmp_path / "accounts"))
    (tmp_path / "accounts").write_text("alice\n")
    with pytest.raises(SFTPFrontendError, match="line 1"):
        read_accounts(str(tmp_path / "accounts"))
