"""docs/faults.md: every test its table names exists, so each row stays backed by a test."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def defined_tests() -> set[str]:
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_*.py"))
    return set(re.findall(r"^def (test_\w+)", sources, flags=re.MULTILINE))


def test_every_test_named_in_the_faults_table_exists() -> None:
    table = (ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
    defined = defined_tests()
    named = set(re.findall(r"`(?:[\w/]+\.py::)?(test_\w+)(?:\[[^\]]*\])?`", table))
    assert len(named) >= 40, named
    assert sorted(named - defined) == []
    # abbreviated names: `…any_bytes…`, `test_…_is_not_a_yardstick`, `x.py::test_out_of_memory_…`
    shortened = re.findall(r"`(?:[\w/]+\.py::)?([\w…]*…[\w…]*)`", table)
    assert len(shortened) >= 8, shortened
    for short in shortened:
        pattern = re.compile(".*".join(map(re.escape, short.split("…"))))
        assert any(pattern.fullmatch(name) for name in defined), short
