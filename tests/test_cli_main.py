"""The ``kernelgate`` command itself: its version and ``python -m kernelgate`` (its exit statuses:
tests/test_exit_codes.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kernelgate
from kernelgate import cli


def test_version_is_printed_by_the_command_and_by_python_m() -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    result = subprocess.run(
        [sys.executable, "-m", "kernelgate", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"kernelgate {kernelgate.__version__}"
