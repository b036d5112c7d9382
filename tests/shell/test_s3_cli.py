"""``tahoe s3 add-account``: its refusals, before it asks the gateway for anything."""
from __future__ import annotations

import io
from pathlib import Path

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
