"""tools/rescreen.py: the screen run again on the judge's records (synthetic ones here, shaped like
tests/test_own_rounds.py's two own levels of one layer)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from factories import tools_script
from test_own_rounds import own_two, process

from kernelgate.config import GateConfig
from kernelgate.plugin.evidence import write_records
from kernelgate.plugin.samehost import KERNEL, Suspect
from kernelgate.verdict.compare import compare


def rescreen() -> ModuleType:
    return tools_script("rescreen")


def records(tmp_path: Path, *levels: float) -> Path:
    """The judge's records of one suspect per process level, each screened against rounds at 100 and
    106 µs of this runner (host B)."""
    stored = own_two(100.0, 106.0)
    kept = []
    for i, level in enumerate(levels):
        run = process(level, 10 + i)
        screen = compare(stored, run, GateConfig())
        nodeid = f"benchmarks/test_yolo.py::test_yolo[c{i}]"
        suspect = Suspect(nodeid, KERNEL, screen, stored.to_json(), "", run.to_json())
        kept.append({"suspect": suspect.to_json(), "base": [], "head": []})
    return write_records(tmp_path / "kg-aa-1", kept)


def test_it_lists_the_suspects_the_screen_lets_go_now_and_counts_an_injection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = records(tmp_path, 106.5, 110.0)  # at the slower own level; 3.8 % past it
    script = rescreen()
    found = list(script.cases([path]))
    assert len(found) == 2
    config = GateConfig()
    (line,) = script.let_go(found[0], config)
    assert line.startswith("passed at the level of this runner's own rounds: ") and "model.0: +3.4 %" in line
    assert script.let_go(found[1], config) is None  # still a suspect
    # +3 % into each layer of >= 20 µs (model.0 and the steady 1 ms model.1) of both: caught either way
    assert script.injected(found, 3.0, config) == (4, 4, 4)
    # +0.1 % into the first: model.0 at 106.6 µs is within 0.64 µs of the slower own round, over the
    # full threshold of the pooled median (103 µs): the guard failed it, the own-level pass does not
    assert script.injected(found[:1], 0.1, config) == (2, 1, 0)
    monkeypatch.setattr("sys.argv", ["rescreen.py", str(path), "--inject", "3"])
    script.main()
    out = capsys.readouterr().out
    said = (
        "kg-aa-1          yolov8n-fp16-bs1-640: no longer a suspect\n    passed at the level of this runner's"
    )
    assert said in out
    assert "2 suspect configuration(s) against their runner's own rounds; 1 no longer" in out
    counted = "+3 % in each device layer of >= 20 µs: 4 cases, failed in the screen 4 without the own-level"
    assert f"{counted} pass, 4 with it" in out
