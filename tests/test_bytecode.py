"""machine/bytecode.py: when the judge's processes keep their own bytecode."""

from __future__ import annotations

import importlib
import py_compile
import sys
from pathlib import Path

import pytest

from kernelgate.machine import bytecode


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable package without bytecode, found by name (never imported)."""
    root = tmp_path / "site"
    (root / "kgprobe").mkdir(parents=True)
    init = root / "kgprobe" / "__init__.py"
    init.write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    return init


def test_compiles_each_time_only_where_nothing_keeps_bytecode(package: Path) -> None:
    off = {bytecode.NO_WRITE_VAR: "1"}
    assert bytecode.compiles_each_time(off, "kgprobe")
    assert not bytecode.compiles_each_time({}, "kgprobe")  # Python writes its own
    assert not bytecode.compiles_each_time(off | {bytecode.PREFIX_VAR: "/x"}, "kgprobe")
    assert not bytecode.compiles_each_time(off, "kgprobe_not_installed")
    py_compile.compile(str(package), cfile=importlib.util.cache_from_source(str(package)))
    assert not bytecode.compiles_each_time(off, "kgprobe")  # installed with its .pyc
    assert "kgprobe" not in sys.modules


def test_kept_points_the_processes_at_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bytecode, "compiles_each_time", lambda env, probe="torch": True)
    env = {bytecode.NO_WRITE_VAR: "1", "PATH": "/bin"}
    out = bytecode.kept(env, tmp_path)
    assert out is not None
    assert bytecode.NO_WRITE_VAR not in out and out["PATH"] == "/bin"
    assert Path(out[bytecode.PREFIX_VAR]) == tmp_path
    assert env[bytecode.NO_WRITE_VAR] == "1"  # the caller's mapping is left as it was
    monkeypatch.setattr(bytecode, "compiles_each_time", lambda env, probe="torch": False)
    assert bytecode.kept(env, tmp_path) is None  # the caller's environment as it is
    assert "compileall" in bytecode.describe(tmp_path)
