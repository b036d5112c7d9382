"""Programs the tests run that are not Python packages (Debian's restic, rclone, s3cmd, ...)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["INSTALL", "require"]

#: The script that installs them (as root; quick when they are there).
INSTALL = Path(__file__).parents[2] / "misc" / "ci" / "install-system-packages.sh"


def require(program: str) -> None:
    """``program`` is installed, by misc/ci/install-system-packages.sh if missing; a test
    without it fails under CI and is skipped elsewhere."""
    if shutil.which(program) is None:
        result = subprocess.run(["sh", str(INSTALL)], capture_output=True, text=True,
                                timeout=600, stdin=subprocess.DEVNULL)
        if shutil.which(program) is None:
            message = (f"{program} is missing and {INSTALL} could not install it"
                       f" (exit {result.returncode}): {result.stderr.strip()}")
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
