"""SUMMARY.md beside a baseline, ``kernelgate baseline diff`` (a re-record's review) and
``kernelgate baseline migrate``: golden outputs from checked-in data."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from factories import ARCH, META, entry, measurement
from real_data import BASE, GOLDEN, SLOWED, check_golden
from test_coldstart import cold
from test_host_fingerprint import A, B

from kernelgate import cli
from kernelgate.baseline import slim, summary
from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME
from kernelgate.coldstart import phases
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.measure.results import Measurement, combine

V8 = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
COLD = "benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-warm]"
NO_CONFIG = ["--config", "/nonexistent/pyproject.toml"]


def rounds(scale: float = 1.0) -> Measurement:
    """yolov8n in 3 rounds: two on host A, one on host B."""
    made = []
    for r, host in enumerate((A, A, B)):
        m = measurement(
            {"model.0": [s * scale for s in (30.0 + r, 31.0, 29.5)], "model.1": 1200.0 * scale},
            {"model.0.conv :: gemm": 25.0},
            wall=3980.0,
        )
        made.append(dataclasses.replace(m, hosts=(host,)))
    return combine(made)


def cold_entry() -> baseline.Entry:
    record = cold()
    return baseline.Entry(COLD, coldverdict.carrier(record), coldverdict.bench_fields(None, COLD, record))


def test_the_summary_of_a_baseline_file(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, [entry(V8, rounds()), cold_entry()], arch=ARCH, **META)
    check_golden(GOLDEN / "summary.md", summary.path_for(path).read_text())


def test_a_cpu_baseline_summarizes_cpu_time(tmp_path: Path) -> None:
    cpu = "cpu-x86-64-amd-epyc"
    path = tmp_path / cpu / FILE_NAME
    baseline.save(path, [entry(V8, measurement({"model.0": 900.0}, arch=cpu))], arch=cpu, **META)
    text = summary.path_for(path).read_text()
    assert "| yolov8n-fp16-bs1-640 | total CPU time | 900 µs | — |" in text and "GPU time" not in text


def test_the_phases_of_a_cold_start_are_in_the_order_they_run() -> None:
    assert summary.PHASES == phases.PHASES
    assert summary.COLDSTART_TOTAL == phases.TOTAL and summary.COLDSTART_KEY == coldverdict.EXTRA_KEY


def test_a_re_record_that_moved_less_than_the_last_digit_leaves_the_lines_as_they_were(
    tmp_path: Path,
) -> None:
    """3 significant digits: +0.1 % keeps 31.0 µs and 1.20 ms as they were; only what moved changes."""
    texts = []
    for scale in (1.0, 1.001):
        path = tmp_path / str(scale) / ARCH / FILE_NAME
        baseline.save(path, [entry(V8, rounds(scale))], arch=ARCH, **META)
        texts.append(summary.path_for(path).read_text().splitlines())
    changed = [(a, b) for a, b in zip(*texts, strict=True) if a != b]
    assert changed == []


def test_kernelgate_baseline_diff_of_a_real_regression(capsys: pytest.CaptureFixture[str]) -> None:
    """The committed H200 yolov8n record against one with model.2 run twice, as if re-recorded."""
    assert cli.main(["baseline", "diff", str(BASE), str(SLOWED), *NO_CONFIG]) == 0
    out = capsys.readouterr().out
    check_golden(GOLDEN / "baseline_diff.md", out)
    assert "| yolov8n-fp16-bs1-640 | `model.2` C2f | 100 µs | 201 µs | +99.8 % (+100.2 µs) | 2.5 % |" in out


def test_a_diff_names_new_and_gone_configurations_and_a_new_architecture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old" / ARCH / FILE_NAME, tmp_path / "new" / ARCH / FILE_NAME
    baseline.save(old, [entry(V8, rounds()), cold_entry()], arch=ARCH, **META)
    other = "benchmarks/test_yolo.py::test_yolo[yolo11n-fp16-bs1-640]"
    yolo11n = entry(other, measurement({"model.0": 5.0}, benchmark="yolo11n-fp16-bs1-640"))
    baseline.save(new, [entry(V8, rounds(1.1)), yolo11n], arch=ARCH, **META)
    assert cli.main(["baseline", "diff", str(old.parent), str(new.parent), *NO_CONFIG]) == 0
    out = capsys.readouterr().out
    assert "**1 of 1 configuration(s) moved**" in out
    assert "New: yolo11n-fp16-bs1-640. Gone: coldstart-yolov8n-fp16-bs1-640-warm." in out
    assert (
        "| yolov8n-fp16-bs1-640 | `model.1` Conv | 1.20 ms | 1.32 ms | +10.0 % (+120.0 µs) | 2.5 % |" in out
    )
    assert (
        "Hosts of the new file: 1 round of an unknown host; `758429a8` (2 rounds), `90b17327` (1 round)"
        in out
    )
    assert cli.main(["baseline", "diff", str(tmp_path / "none"), str(new.parent), *NO_CONFIG]) == 0
    assert "**0 of 0 configuration(s) moved**" in capsys.readouterr().out


def test_diff_of_an_odd_number_of_files_or_a_broken_one_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["baseline", "diff", str(BASE)]) == 2
    assert "in pairs" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert cli.main(["baseline", "diff", str(BASE), str(broken), *NO_CONFIG]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_kernelgate_baseline_migrate_rewrites_a_schema_1_file_with_its_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "sm90-nvidia-h200" / FILE_NAME
    path.parent.mkdir()
    shutil.copy(BASE, path)
    before = baseline.load(path)
    assert cli.main(["baseline", "migrate", "--baseline-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: schema 1 -> 2, 522,109 bytes -> " in out and "(SUMMARY.md)" in out
    assert json.loads(path.read_text())["kernelgate"]["schema_version"] == 2
    assert slim.sidecar_path(path).is_file()
    assert baseline.load(path) == before
    assert cli.main(["baseline", "migrate", str(path)]) == 0  # again: the same files
    assert "schema 2 -> 2" in capsys.readouterr().out and baseline.load(path) == before


def test_a_diff_says_when_the_files_were_measured_in_other_numbers_of_placements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old" / ARCH / FILE_NAME, tmp_path / "new" / ARCH / FILE_NAME
    baseline.save(old, [entry(V8, rounds())], arch=ARCH, **META)
    baseline.save(new, [entry(V8, dataclasses.replace(rounds(1.03), placements=4))], arch=ARCH, **META)
    assert cli.main(["baseline", "diff", str(old.parent), str(new.parent), *NO_CONFIG]) == 0
    assert "Measured in other numbers of places of GPU memory (1 → 4; " in capsys.readouterr().out
    baseline.save(old, [entry(V8, dataclasses.replace(rounds(), placements=4))], arch=ARCH, **META)
    assert cli.main(["baseline", "diff", str(old.parent), str(new.parent), *NO_CONFIG]) == 0
    assert "places of GPU memory" not in capsys.readouterr().out
