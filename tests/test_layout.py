"""The repository's layout as the project keeps it: one module per concept, each under 400 lines, no
catch-all ``utils`` module (import-linter keeps the layers and cycles: pyproject.toml); ``.ci/`` for CI
alone, ``benchmarks/`` for the gated suite alone, the GPU measurement and analysis scripts in
``tools/``; and comments that say what the code does, not on which day what happened (the history is
in git and docs/measurements.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SRC = ROOT / "src" / "kernelgate"
LIMIT = 400
# a calendar date (2026-11-26): a comment or docstring that tells a story of one day
DATED = re.compile(r"20[0-9][0-9]-[01][0-9]-")


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


def test_ci_holds_only_what_ci_runs() -> None:
    """CI runs ``.ci/run``; the README's commands run ``.ci/gate``; both source ``.ci/setup``."""
    assert sorted(p.name for p in (ROOT / ".ci").iterdir()) == ["gate", "run", "setup"]


def test_benchmarks_hold_only_the_gated_suite() -> None:
    found = sorted(p.name for p in (ROOT / "benchmarks").iterdir() if p.name != "__pycache__")
    assert found == ["conftest.py", "test_coldstart.py", "test_yolo.py"], found


def test_every_tool_is_listed_in_its_readme() -> None:
    readme = (ROOT / "tools" / "README.md").read_text("utf-8")
    tools = sorted(p.name for p in (ROOT / "tools").iterdir() if p.is_file() and p.name != "README.md")
    assert len(tools) > 5
    missing = [name for name in tools if f"`{name}`" not in readme]
    assert not missing, f"tools/README.md lists no line for {missing}"


def dated_lines(root: Path) -> list[str]:
    """``path:line: text`` of every line under ``root`` that holds a calendar date."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue  # not text
        for number, line in enumerate(text.splitlines(), 1):
            if DATED.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize(
    "root",
    [
        pytest.param(SRC, id="src"),
        pytest.param(ROOT / ".ci", id="ci"),
        pytest.param(ROOT / ".github", id="github"),
    ],
)
def test_no_comment_tells_the_story_of_a_day(root: Path) -> None:
    """A comment says what the code does and why, in the present tense; which run failed on which
    host on which day belongs in git's history and docs/measurements.md."""
    found = dated_lines(root)
    assert not found, "lines with a date (say what the code does, link the docs for the data):\n" + "\n".join(
        found
    )
