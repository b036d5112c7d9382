"""Load the test vectors copied from the shared reference into ``tests/vectors/``."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).parent / "vectors"


@cache
def load(name: str) -> Any:
    """Parse ``tests/vectors/<name>`` (JSON), once per test session."""
    return json.loads((VECTORS / name).read_text())


def pattern_plaintext(size: int) -> bytes:
    """The vectors' plaintext of ``size`` bytes: byte i is ``i % 251``."""
    return bytes(i % 251 for i in range(size))


UPLOAD_FILES = (
    "immutable-uploads-maxseg131072.json",
    "immutable-uploads-default1MiB.json",
    "immutable-uploads-other-params.json",
)


def upload_cases() -> list[tuple[str, dict]]:
    """Every whole-file case as (test id, case)."""
    return [(f"{name.removeprefix('immutable-uploads-').removesuffix('.json')}/{case['name']}", case)
            for name in UPLOAD_FILES for case in load(name)["cases"]]
