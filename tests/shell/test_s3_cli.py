"""``tahoe s3 add-account``: its refusals, before it asks the gateway for anything."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from tahoe.cli.main import run
from tahoe.cli.s3 import accounts_file, new_access_key_id, new_secret


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err, {"HOME": "/nonexistent"})
    return code, out.getvalue(), err.getvalue()


def test_new_keys() -> None:
    """Access key ids are 20 upper-case letters and digits; secrets 40 characters."""
    key, secret = new_access_key_id(), new_secret()
    assert len(key) == 20 and key.isalnum() and key.upper() == key
    assert len(secret) == 40 and new_secret() != secret


def test_accounts_file_from_the_config(tmp_path: Path) -> None:
    """``[s3]accounts.file`` names the file, relative to the node directory."""
    assert accounts_file(str(tmp_path)) == str(tmp_path / "private" / "s3-accounts")
    (tmp_path / "tahoe.cfg").write_text("[s3]\naccounts.file = keys/s3\n")
    assert accounts_file(str(tmp_path)) == str(tmp_path / "keys" / "s3")


def test_refusals(tmp_path: Path) -> None:
    """No command, a bad or taken access key id, or a file others may read: an error,
    nothing written."""
    code, _, err = _run("-d", str(tmp_path), "s3")
    assert code != 0 and "add-account" in err
    code, _, err = _run("-d", str(tmp_path), "s3", "add-account", "--access-key-id", "a/b")
    assert code != 0 and "letters and digits" in err
    accounts = tmp_path / "private" / "s3-accounts"
    accounts.parent.mkdir()
    accounts.write_text("TAKEN1234 secretsecret URI:DIR2:x:y\n")
    accounts.chmod(0o644)
    code, _, err = _run("-d", str(tmp_path), "s3", "add-account", "--access-key-id", "NEW123")
    assert code == 1 and "chmod 600" in err
    accounts.chmod(0o600)
    code, _, err = _run("-d", str(tmp_path), "s3", "add-account", "--access-key-id",
                        "TAKEN1234")
    assert code == 1 and "already" in err
    code, _, err = _run("-d", str(tmp_path), "s3", "add-account")
    assert code == 1 and "node.url" in err  # no running node: the gateway is not asked
    assert accounts.read_text() == "TAKEN1234 secretsecret URI:DIR2:x:y\n"


def test_an_account_line_is_added_whole_or_not_at_all(tmp_path: Path) -> None:
    """Accounts are added after what is there (the header first in a new file); on a disk
    that is full the command fails naming the cause and the file stays as it was (before,
    a cut line was left, and the gateway refused to start on it)."""
    from tahoe.cli.errors import CLIError
    from tahoe.cli.s3 import _append
    from tests.support.sysfaults import fill, require_root, tmpfs
    path = tmp_path / "private" / "s3-accounts"
    _append(str(path), "AK1 secret1 URI:DIR2:a:b\n")
    _append(str(path), "AK2 secret2 URI:DIR2:c:d\n")
    lines = path.read_text().splitlines()
    assert lines[0].startswith("#") and lines[-2:] == ["AK1 secret1 URI:DIR2:a:b",
                                                       "AK2 secret2 URI:DIR2:c:d"]
    assert path.stat().st_mode & 0o777 == 0o600
    require_root()
    with tmpfs(tmp_path / "full", 64 * 1024) as full:
        accounts = full / "s3-accounts"
        _append(str(accounts), "AK1 secret1 URI:DIR2:a:b\n")
        before = accounts.read_bytes()
        fill(full / "filler")
        with pytest.raises(CLIError, match="No space left on device; no account was added"):
            _append(str(accounts), "AK2 " + "s" * 5000 + " URI:DIR2:c:d\n")
        assert accounts.read_bytes() == before
        assert sorted(p.name for p in full.iterdir()) == ["filler", "s3-accounts"]
