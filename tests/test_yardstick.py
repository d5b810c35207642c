"""One answer to "is this baseline entry a yardstick for this result?" (kernelgate.verdict.yardstick),
the same for the plugin, ``kernelgate compare`` and ``kernelgate report``: architecture, integrity,
rounds and plausibility."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, entry, measurement
from real_data import BASE

from kernelgate import cli
from kernelgate.config import GateConfig
from kernelgate.verdict import yardstick

NO_CONFIG = ["--config", "/nonexistent/pyproject.toml"]


def scaled(tmp_path: Path, factor: float, name: str = "scaled.json") -> Path:
    """The real H200 baseline with every time multiplied by ``factor``: consistent with itself (the
    layers still add up to the total), so only plausibility can tell."""
    data = json.loads(BASE.read_text(encoding="utf-8"))
    for bench in data["benchmarks"]:
        record = bench["extra_info"]["kernelgate"]
        for dist in [record[k] for k in ("total_us", "busy_us", "wall_us")] + [
            item["time_us"] for group in ("layers", "kernels") for item in record[group]
        ]:
            dist["samples"] = [s * factor for s in dist["samples"]]
            for key in ("median", "p10", "p90"):
                dist.pop(key, None)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main([*args, *NO_CONFIG])
    return code, capsys.readouterr().out


def test_a_baseline_times_1e250_is_not_comparable_instead_of_all_improved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "compare", str(scaled(tmp_path, 1e250)), str(BASE))
    assert code == 1
    assert out.startswith(
        "yolov8n-fp16-bs1-640: not compared: the baseline's forward takes 1.174e+253 µs (3.26e+243 h;"
    )
    assert "more than 1 h is no measurement of one forward" in out and "pass" not in out


def test_a_baseline_twenty_times_slower_is_not_comparable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "compare", str(scaled(tmp_path, 20.0)), str(BASE))
    assert code == 1
    assert "not compared: the baseline's total (2.348e+04 µs) is 20x the current one (1174 µs)" in out
    # nine times: a big improvement, but a possible one
    assert run(capsys, "compare", str(scaled(tmp_path, 9.0)), str(BASE))[0] == 0


def test_a_current_result_ten_times_slower_still_fails_as_a_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "compare", str(BASE), str(scaled(tmp_path, 10.0)))
    assert code == 1 and "REGRESSED" in out and "not compared" not in out


def test_plausibility_names_an_empty_total_and_is_not_applied_to_cpu_op_times() -> None:
    zero = measurement({"model.0": 0.0})
    assert yardstick.plausibility(zero, measurement({"model.0": 5.0})) == [
        "the baseline's total is 0 µs (no time at all)"
    ]
    cpu = "cpu-x86-64-amd-epyc"
    assert (
        yardstick.plausibility(measurement({"0": 500.0}, arch=cpu), measurement({"0": 20.0}, arch=cpu)) == []
    )


def test_kernelgate_report_applies_the_checks_of_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `kernelgate report` compared any pair: another GPU's, an implausible one."""
    data = json.loads(BASE.read_text(encoding="utf-8"))
    data["kernelgate"]["arch"] = "sm80-nvidia-a100"
    data["benchmarks"][0]["extra_info"]["kernelgate"]["arch"] = "sm80-nvidia-a100"
    other = tmp_path / "a100.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    code, out = run(capsys, "report", str(other), str(BASE), "--out", str(tmp_path / "r1"))
    assert code == 1
    assert (
        "yolov8n-fp16-bs1-640: not compared: the baseline is of sm80-nvidia-a100, the current result of "
        in out
    )
    code, out = run(capsys, "report", str(scaled(tmp_path, 1e250)), str(BASE), "--out", str(tmp_path / "r2"))
    assert code == 1 and "not compared: the baseline's forward takes" in out
    report = (tmp_path / "r2" / "report.md").read_text(encoding="utf-8")  # never reported as a pass
    assert report.splitlines()[1].startswith("### ❌ kernelgate: no benchmark compared; 1 not compared")


def test_match_by_node_id_then_by_a_unique_benchmark_id() -> None:
    a, b = entry("tests/a.py::test_x", measurement({"model.0": 1.0})), entry("b.py::test_y")
    base = {a.fullname: a, b.fullname: b}
    assert yardstick.match(base, entry("tests/a.py::test_x")) is a
    moved = entry("other/tree/a.py::test_x", measurement({"model.0": 1.0}, benchmark="yolov8n-fp16-bs1-640"))
    assert yardstick.match({a.fullname: a}, moved) is a
    assert yardstick.match(base, moved) is None  # two entries have that benchmark id: no guess


def test_kernelgate_compare_of_entries_matched_by_benchmark_id_reports_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It raised KeyError where a pair matched by benchmark id failed (it looked up the node id)."""
    from real_data import SLOWED

    data = json.loads(SLOWED.read_text(encoding="utf-8"))
    data["benchmarks"][0]["fullname"] = "elsewhere/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(data), encoding="utf-8")
    code, out = run(capsys, "compare", str(BASE), str(moved))
    assert code == 1 and "REGRESSED model.2 C2f" in out


def test_the_plugin_refuses_another_gpus_baseline_unless_allowed() -> None:
    h100 = measurement({"model.0": 100.0}, {"model.0.conv :: k": 100.0}, arch="sm90-nvidia-h100-80gb-hbm3")
    here = measurement({"model.0": 100.0}, {"model.0.conv :: k": 100.0})
    problems = yardstick.pair_problems(entry("b::t", h100), here, GateConfig())
    assert problems == [f"the baseline is of sm90-nvidia-h100-80gb-hbm3, the current result of {ARCH}"]
    assert yardstick.pair_problems(entry("b::t", h100), here, GateConfig(), other_gpu=True) == []
    a100: Any = measurement({"model.0": 100.0}, {"model.0.conv :: k": 100.0}, arch="sm80-nvidia-a100")
    assert yardstick.pair_problems(entry("b::t", a100), here, GateConfig(), other_gpu=True) != []
