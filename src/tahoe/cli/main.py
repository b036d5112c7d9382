"""Entry point of the ``tahoe`` console script: dispatch to one module per subcommand.

Imports only the standard library, so that the CLI starts fast.
"""
from __future__ import annotations

import sys
from typing import TextIO

from .._version import __version__

VERSION_TEXT = f"tahoe (tahoe-lafs-py) {__version__}, compatible with Tahoe-LAFS 1.20"


def run(argv: list[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run the command line ``argv`` (without the program name); return the exit code."""
    if argv in (["--version"], ["-V"], ["--version-and-path"]):
        stdout.write(VERSION_TEXT + "\n")
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        stdout.write("Usage: tahoe [--version] SUBCOMMAND [options]\n")
        return 0 if argv else 2
    stderr.write(f"tahoe: unknown command {argv[0]!r}\n")
    return 2


def main() -> None:
    """Console-script entry point."""
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
