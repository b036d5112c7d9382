"""The real Tahoe-LAFS 1.20.0, installed outside the clone for interop tests.

:func:`ensure_tahoe120` returns the absolute path of its ``tahoe`` executable,
installing it first if needed by running ``misc/interop/install-tahoe-1.20.sh``
(which holds the pinned versions, the lock file and the marker file; see
there).  The virtualenv lives under ``~/.cache/tahoe-lafs-py/tahoe-1.20.0`` so
fresh clones on the same machine, CI's included, reuse it.

Tahoe is only ever run as a separate program (its CLI and web API); nothing
here imports it.  To drive its nodes use :mod:`tests.support.nodes`, which is
generic over the ``tahoe`` executable.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["TAHOE120_VERSION", "INSTALL_SCRIPT", "InstallFailed", "base_python", "ensure_tahoe120"]

TAHOE120_VERSION = "tahoe-lafs/1.20.0"
INSTALL_SCRIPT = Path(__file__).resolve().parents[2] / "misc" / "interop" / "install-tahoe-1.20.sh"

# A cold install (create the venv, download and build wheels) takes about a
# minute here; leave room for a slow mirror.
INSTALL_TIMEOUT = 900.0


class InstallFailed(RuntimeError):
    """Tahoe-LAFS 1.20 could not be installed or does not report its version."""


def base_python() -> str:
    """The machine's python3.11 (the interpreter our venv was made from), as a path or name."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for prefix in (sys.base_exec_prefix, sys.base_prefix):
        candidate = Path(prefix) / "bin" / version
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("python3.11") or "python3.11"


def ensure_tahoe120() -> Path:
    """Absolute path of the Tahoe-LAFS 1.20.0 ``tahoe`` executable, installing it if missing.

    Safe to call from several processes at once (the installer takes a lock).
    Cheap when already installed (one shell and one Python start-up).

    :raises InstallFailed: if the installer fails or prints no usable path.
    """
    env = dict(os.environ)
    env.setdefault("PYTHON", base_python())
    # The installer's venv must not see our venv or our sources.
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(name, None)
    try:
        result = subprocess.run(
            ["sh", str(INSTALL_SCRIPT)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired as e:
        raise InstallFailed(f"{INSTALL_SCRIPT} took more than {INSTALL_TIMEOUT:g} s") from e
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise InstallFailed(
            f"{INSTALL_SCRIPT} exited with {result.returncode}:\n{result.stderr[-4000:]}")
    tahoe = Path(lines[-1])
    if not tahoe.is_absolute() or not os.access(tahoe, os.X_OK):
        raise InstallFailed(f"{INSTALL_SCRIPT} printed {lines[-1]!r}, not an executable path")
    return tahoe
