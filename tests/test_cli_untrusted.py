"""``kernelgate compare`` offline: it compares only what can be trusted, and says why not otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelgate import cli

DATA = Path(__file__).parent / "data"
BASE = DATA / "h200-yolov8n-fp16-baseline.json"
SLOWED = DATA / "h200-yolov8n-fp16-model2-slowed.json"


def edited(tmp_path: Path, change: Any) -> Path:
    data = json.loads(BASE.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "current.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["compare", *args, "--config", "/nonexistent/pyproject.toml"])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_same_record_passes_and_a_slowed_one_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, str(BASE), str(BASE))[:2] == (0, "yolov8n-fp16-bs1-640: pass\n")
    code, out, _ = run(capsys, str(BASE), str(SLOWED))
    assert code == 1 and "REGRESSED model.2 C2f" in out


def test_an_unreliable_result_is_not_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def unreliable(data: dict[str, Any]) -> None:
        record = data["benchmarks"][0]["extra_info"]["kernelgate"]
        record["reliable"] = False
        record["unreliable_reasons"] = ["kernels per iteration differ (iteration 0: 0; the other 19: 450)"]

    code, out, _ = run(capsys, str(BASE), str(edited(tmp_path, unreliable)))
    assert code == 1
    assert out == (
        "yolov8n-fp16-bs1-640: not compared: the current result is unreliable "
        "(kernels per iteration differ (iteration 0: 0; the other 19: 450))\n"
        "  fix: pytest 'benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]' (measure it again)\n"
    )


def test_results_of_two_architectures_are_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def other_gpu(data: dict[str, Any]) -> None:
        data["kernelgate"]["arch"] = "sm80-nvidia-a100"
        data["benchmarks"][0]["extra_info"]["kernelgate"]["arch"] = "sm80-nvidia-a100"

    code, out, _ = run(capsys, str(BASE), str(edited(tmp_path, other_gpu)))
    assert code == 1
    assert "not compared: the baseline is of sm90-nvidia-h200, the current result of sm80-nvidia-a100" in out


def test_a_layer_edited_by_hand_is_not_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def faster_layer(data: dict[str, Any]) -> None:
        layer = data["benchmarks"][0]["extra_info"]["kernelgate"]["layers"][3]["time_us"]
        layer["samples"] = [s / 2 for s in layer["samples"]]
        for key in ("median", "p10", "p90"):
            del layer[key]

    code, out, _ = run(capsys, str(BASE), str(edited(tmp_path, faster_layer)))
    assert code == 1
    assert "not compared: the current result is unreliable (iteration 0: the layers add up to" in out


def test_a_broken_file_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "current.json"
    broken.write_text(
        '{"kernelgate": {"schema_version": 1, "arch": "x"}, "kernelgate": {}}', encoding="utf-8"
    )
    code, out, err = run(capsys, str(BASE), str(broken))
    assert (code, out) == (2, "")
    assert err.startswith(f"kernelgate: {broken}: not a valid baseline: key 'kernelgate' appears twice")
