"""The pure cores import nothing that does I/O (STYLE.md §1)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parent.parent / "src" / "tahoe"
FORBIDDEN = {"twisted", "foolscap", "socket", "os", "time", "random", "subprocess", "io",
             "pathlib", "shutil", "tempfile", "threading", "asyncio", "urllib", "http"}
#: Packages that are pure throughout.
CORE_PACKAGES = ["util", "crypto", "caps", "immutable", "mutable", "dirnode", "grid_manager"]
#: Pure modules inside packages that also hold shells, named one by one.
CORE_FILES = [
    *(f"storage/{name}.py" for name in (
        "__init__", "errors", "paths", "leases", "randomaccess", "immutable_container",
        "mutable_container", "containers", "space", "ranges", "arguments", "advisories",
        "crawl_state", "http_messages")),
    *(f"introducer/{name}.py" for name in ("__init__", "errors", "announcement")),
    "client/__init__.py", "client/placement.py", "client/check_results.py", "client/deep_stats.py",
    *(f"node/{name}.py" for name in ("__init__", "errors", "config", "settings", "values",
                                      "yaml_files")),
    "web/__init__.py", "web/json_shapes.py",
    "frontends/__init__.py", "frontends/accounts.py", "frontends/sftp_paths.py",
    *(f"web/{name}.py" for name in ("humanize", "svgchart", "page", "welcome", "checkhtml",
                                     "statshtml")),
    "cli/aliases.py", "cli/errors.py",
    *(f"invite/{name}.py" for name in ("__init__", "errors", "messages")),
    *(f"stats/{name}.py" for name in ("__init__", "samples", "registry", "cpu", "openmetrics")),
    *(f"s3/{name}.py" for name in ("__init__", "errors", "keys", "sigv4", "sigv2", "chunked",
                                   "checksums", "xmlio", "accounts", "objects")),
]
CORE_MODULES = sorted({*(p for pkg in CORE_PACKAGES for p in (SRC / pkg).rglob("*.py")),
                       *(SRC / name for name in CORE_FILES)})


def imported_top_level_names(path: Path) -> set[str]:
    """Top-level module names a file imports (absolute imports only)."""
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and not n.level and n.module}
    return {m.split(".")[0] for m in names}


def test_core_modules_found() -> None:
    """Every named core module exists (so the purity test cannot pass vacuously)."""
    assert len(CORE_MODULES) >= 40
    assert all(path.is_file() for path in CORE_MODULES)


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_core_is_pure(path: Path) -> None:
    """A core module imports no networking, file, clock or randomness module."""
    assert not imported_top_level_names(path) & FORBIDDEN


def test_detector_catches_a_forbidden_import(tmp_path: Path) -> None:
    """The import scanner does see `import os` and `from twisted.internet import x`."""
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom twisted.internet import reactor\nfrom . import x\n")
    assert imported_top_level_names(sample) == {"os", "twisted"}
