"""The ``kernelgate`` command itself: its version, ``python -m kernelgate``, and the exit status of
a failure of kernelgate's own (never that of a verdict)."""

from __future__ import annotations

import argparse
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


def test_an_unexpected_exception_exits_3_with_the_traceback_never_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli, "_arch", broken)
    code = cli.main(["arch", "--cpu"])
    assert code == cli.INTERNAL_ERROR == 3  # 1 means "a verdict failed the run", 2 bad input
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err
    assert "kernelgate arch: internal error (ZeroDivisionError: division by zero)" in err
    assert "is not a verdict" in err


def test_a_failing_report_merge_exits_3_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(argv: list[str]) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_merge", broken)
    assert cli.main(["report", "merge", "x", "--out", "y"]) == 3
    assert "kernelgate report merge: internal error (RuntimeError: boom)" in capsys.readouterr().err
