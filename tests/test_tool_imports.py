"""The measurement scripts in tools/ import kernelgate's modules by name, often inside a shell script
(``python -c "from kernelgate.machine import pinning"``) where nothing else checks the name: a module
moved or renamed breaks them only on the GPU machine they run on. Each such import must resolve."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
IMPORT = re.compile(r"from (kernelgate[\w.]*) import (\w+(?: as \w+)?(?:, *\w+(?: as \w+)?)*)")


def imports(text: str) -> list[tuple[str, list[str]]]:
    """Each ``from kernelgate... import a, b as c`` in ``text``: the module and the names it takes."""
    return [
        (m.group(1), [name.strip().split(" as ")[0] for name in m.group(2).split(",")])
        for m in IMPORT.finditer(text)
    ]


def unresolved(module: str, names: list[str]) -> list[str]:
    """The names of ``from module import names`` that do not resolve (a module or an attribute)."""
    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        return [f"{module} ({exc})"]
    missing = []
    for name in names:
        if hasattr(found, name):
            continue
        try:
            importlib.import_module(f"{module}.{name}")
        except ImportError:
            missing.append(f"{module}.{name}")
    return missing


def test_the_import_pattern_reads_a_shell_scripts_python_line() -> None:
    line = '"$py" -c "from kernelgate.machine import pinning, visible as v; from kernelgate import coldgate"'
    assert imports(line) == [("kernelgate.machine", ["pinning", "visible"]), ("kernelgate", ["coldgate"])]


def test_a_name_that_is_gone_is_reported() -> None:
    assert unresolved("kernelgate", ["coldgate"]) == ["kernelgate.coldgate"]
    assert unresolved("kernelgate.nowhere", ["x"])[0].startswith("kernelgate.nowhere (")
    assert unresolved("kernelgate.machine", ["pinning", "visible"]) == []


@pytest.mark.parametrize("script", sorted(p.name for p in TOOLS.iterdir() if p.is_file()))
def test_every_kernelgate_import_of_a_tool_resolves(script: str) -> None:
    found = imports((TOOLS / script).read_text(encoding="utf-8"))
    missing = [name for module, names in found for name in unresolved(module, names)]
    assert not missing, f"tools/{script} imports what kernelgate no longer has: {', '.join(missing)}"
