"""Every CLI command but ``tahoe run`` starts without Twisted or Foolscap (fast start-up)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "src" / "tahoe" / "cli"
MODULES = sorted(f"tahoe.cli.{p.stem}" for p in CLI.glob("*.py")
                 if p.stem not in ("__init__", "run"))


def test_there_are_cli_modules() -> None:
    """The scan below covers the commands (so it cannot pass vacuously)."""
    assert {"tahoe.cli.put", "tahoe.cli.get", "tahoe.cli.ls", "tahoe.cli.cp"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_cli_module_imports_no_reactor(module: str) -> None:
    """Importing the command's module loads neither twisted nor foolscap."""
    code = (f"import json, sys, {module};"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert not set(json.loads(result.stdout)) & {"twisted", "foolscap"}
