"""The package's layout as the project keeps it: one module per concept, each under 400 lines, no
catch-all ``utils`` module (import-linter keeps the layers and cycles: pyproject.toml). Once, the
same-host judge's plugin module grew to 406 lines unnoticed (2026-11-27)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).parent.parent / "src" / "kernelgate"
LIMIT = 400


def test_every_module_is_under_400_lines() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 50  # the package, not an empty folder
    long = {
        str(p.relative_to(SRC)): n for p in modules if (n := len(p.read_text("utf-8").splitlines())) >= LIMIT
    }
    assert not long, f"modules of {LIMIT} lines or more (split them by concept): {long}"


def test_there_is_no_catch_all_module() -> None:
    names = {p.stem for p in SRC.rglob("*.py")}
    catch_all = {"utils", "util", "helpers", "misc", "common"}
    assert not names & catch_all, names & catch_all
