"""The message types are what the protocol's schema generates: src/elementals/schema.py
against protocol/schema/messages.json (scripts/generate_types.py). mypy then holds the SDK
to them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_schema_py_is_what_the_protocol_schema_generates() -> None:
    check = subprocess.run(
        [sys.executable, "scripts/generate_types.py", "--check"], cwd=PACKAGE, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
