"""kernelgate changes: Apache Otava's E-Divisive means over nights of recorded H200 noise (the committed
baseline's round medians, tests/history_nights.py) finds a synthetic step and nothing else, says when
a step coincides with a host or runner-software change, and reports nothing over 30 nights of noise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_nights import nights

from kernelgate import cli
from kernelgate.config import GateConfig, load_pyproject
from kernelgate.history import changes
from kernelgate.history import nights as store
from kernelgate.history.nights import TOTAL

pytest.importorskip("otava", reason="kernelgate changes needs Apache Otava: pip install -e '.[dev]'")

ROOT = Path(__file__).parent.parent
V8 = "yolov8n-fp16-bs1-640"


def gate() -> GateConfig:
    return load_pyproject(ROOT / "pyproject.toml")[0]


def test_thirty_nights_of_recorded_noise_report_nothing() -> None:
    assert changes.find(nights(30), gate()) == []


@pytest.mark.parametrize(
    ("config", "figure", "at"), [(V8, "model.9", 20), ("yolo11n-fp16-bs1-640-graph", "model.2", 8)]
)
def test_a_three_percent_step_of_one_layer_is_found_and_nothing_else(
    config: str, figure: str, at: int
) -> None:
    history = nights(30, step=(config, figure, at, 1.03))
    (found,) = changes.find(history, gate())
    assert (found.benchmark, found.figure) == (config, figure)
    assert (found.last_good.index, found.first_bad.index) == (at - 1, at)
    assert found.first_bad.commit == history[at].commit
    assert found.slower and 0.025 < found.size < 0.035
    assert found.low is not None and found.high is not None and found.low < found.size < found.high
    assert found.low > 0.02 and found.p_value < changes.DEFAULT_PVALUE
    assert not found.runner and found.coincides == ()
    assert [r.bad for r in changes.to_bisect([found])] == [history[at].commit]


def test_a_step_smaller_than_the_layer_threshold_is_not_reported() -> None:
    assert changes.find(nights(30, step=(V8, "model.9", 15, 1.015)), gate()) == []


def test_a_step_at_a_driver_change_is_the_runners_and_not_bisected() -> None:
    history = nights(30, step=(V8, "model.9", 12, 1.04), host_change_at=12)
    (found,) = changes.find(history, gate())
    assert found.runner and found.first_bad.index == 12
    assert "driver 580.159.04 -> 590.48.01" in found.coincides[0] and "a host change" in found.coincides[0]
    assert "the runner's, not the code's" in found.describe()
    assert changes.to_bisect([found]) == []


def test_a_driver_change_without_a_step_reports_nothing() -> None:
    assert changes.find(nights(30, host_change_at=10), gate()) == []


def test_a_step_without_a_commit_between_the_nights_is_not_the_code() -> None:
    commits = [f"{min(n, 16):040x}" for n in range(30)]  # the last nights measure one commit
    history = nights(30, commits=commits, step=(V8, TOTAL, 20, 1.05))
    (found,) = changes.find(history, gate())
    assert found.figure == TOTAL and found.runner and changes.NO_COMMIT in found.coincides


def test_a_faster_step_is_reported_as_faster_and_not_bisected() -> None:
    (found,) = changes.find(nights(30, step=(V8, "model.9", 10, 0.95)), gate())
    assert not found.slower and changes.to_bisect([found]) == []


def test_the_command_writes_the_changes_and_fails_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history"
    store.save(store.path_for(history, "sm90-nvidia-h200"), nights(24, step=(V8, "model.9", 16, 1.03)))
    out = tmp_path / "changes.json"
    args = ["changes", "--dir", str(history), "--config", str(ROOT / "pyproject.toml"), "--json", str(out)]
    assert cli.main(args) == 0
    assert cli.main([*args, "--fail"]) == 1
    printed = capsys.readouterr().out
    assert "slower: yolov8n-fp16-bs1-640 (sm90-nvidia-h200), layer model.9" in printed
    (saved,) = json.loads(out.read_text())
    assert saved["figure"] == "model.9" and saved["first_bad"]["index"] == 16
    assert changes.Change.from_json(saved).to_json() == saved


def test_the_command_over_noise_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(store.path_for(tmp_path, "sm90-nvidia-h200"), nights(30))
    assert (
        cli.main(["changes", "--dir", str(tmp_path), "--config", str(ROOT / "pyproject.toml"), "--fail"]) == 0
    )
    assert "no step change over 30 night(s)" in capsys.readouterr().out
