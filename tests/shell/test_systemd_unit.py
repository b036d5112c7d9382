"""misc/systemd/tahoe-storage@.service: its keys, and ``systemd-analyze verify`` where
systemd is installed."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).parent.parent.parent / "misc" / "systemd" / "tahoe-storage@.service"


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Sections -> key -> values (a key may repeat) of a systemd unit file."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, sep, value = line.partition("=")
        assert sep and current is not None, f"line {number} is not key=value in a section: {raw}"
        assert not raw.endswith("\\"), "no continuation lines expected"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def test_unit_keys() -> None:
    """The unit runs `tahoe run --allow-stdin-close` on its instance's node directory."""
    unit = parse_unit(UNIT.read_text())
    assert set(unit) == {"Unit", "Service", "Install"}
    service = unit["Service"]
    assert "%i" in unit["Unit"]["Description"][0]
    assert service["Type"] == ["simple"]
    [exec_start] = service["ExecStart"]
    program, *args = exec_start.split()
    assert program.startswith("/") and program.endswith("/tahoe")
    assert args[:2] == ["run", "--allow-stdin-close"]
    nodedir = args[-1]
    assert nodedir.endswith("/%i")
    assert service["WorkingDirectory"] == [nodedir]
    assert nodedir in service["ReadWritePaths"][0].split()
    assert service["KillSignal"] == ["SIGTERM"]
    assert service["Restart"] == ["on-failure"]
    assert service["User"] and service["User"] != ["root"]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]
    assert "network-online.target" in unit["Unit"]["After"][0]


def test_running_guide_names_the_unit() -> None:
    """docs/running.md tells how to install and start the unit."""
    guide = (UNIT.parent.parent.parent / "docs" / "running.md").read_text()
    assert "misc/systemd/tahoe-storage@.service" in guide
    assert "--allow-stdin-close" in guide and "reserved_space" in guide


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (package systemd)")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    """systemd-analyze verify finds nothing wrong (with ExecStart pointed at a real program)."""
    text = UNIT.read_text()
    program = parse_unit(text)["Service"]["ExecStart"][0].split()[0]
    tahoe = Path(sys.executable).parent / "tahoe"
    assert tahoe.exists()
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(program, str(tahoe)))
    result = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    complaints = [line for line in (result.stdout + result.stderr).splitlines()
                  if "tahoe-storage@" in line]
    assert result.returncode == 0 and complaints == [], result.stdout + result.stderr
    # and it does complain about a broken copy, so the check above means something
    copy.write_text(text.replace(program, str(tahoe)).replace("Type=simple", "Type=bogus"))
    broken = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "tahoe-storage@" in broken.stdout + broken.stderr
