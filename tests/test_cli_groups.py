"""``kernelgate groups RESULTS.json ...``: one table of the time per layer group, wall, busy and host."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from factories import bench_fields, dist, measurement
from real_data import BASE, SLOWED, YOLOV8N_GROUPS, entry

from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import Entry
from kernelgate.cli import main
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.report import groups as report_groups

ROOT = Path(__file__).parent.parent


def results(path: Path, *entries: Entry) -> Path:
    arch = entries[0].measurement.arch
    doc = baseline.document(entries, arch, {}, {}, "2026-11-21T07:30:07+00:00", "5.2.3")
    baseline.write_atomic(path, baseline.dumps(doc))
    return path


def grouped_file(tmp_path: Path) -> Path:
    eager = dataclasses.replace(entry(BASE).measurement, groups=YOLOV8N_GROUPS)
    graph = dataclasses.replace(
        eager, benchmark="yolov8n-fp16-bs1-640-graph", wall=dist(1250.0, eager.busy.n)
    )
    return results(
        tmp_path / "results.json",
        Entry("t.py::test[eager]", eager, bench_fields("t.py::test[eager]")),
        Entry("t.py::test[graph]", graph, bench_fields("t.py::test[graph]")),
    )


def test_markdown_table_of_grouped_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["groups", str(grouped_file(tmp_path)), "--format", "md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "| benchmark | backbone | neck | head | preprocess | NMS | total | busy | wall | host | busy % "
        "| bound |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
        "| yolov8n-fp16-bs1-640 | 540.0 | 281.3 | 305.6 | 46.8 | — | 1173.9 | 1173.9 | 3982.0 | 2808.2 "
        "| 29 % | launch-bound |",
        "| yolov8n-fp16-bs1-640-graph | 540.0 | 281.3 | 305.6 | 46.8 | — | 1173.9 | 1173.9 | 1250.0 | 76.1 "
        "| 94 % | GPU-bound |",
    ]
    assert lines[4] == "" and lines[5].startswith("Medians in µs")
    assert not any("CPU rows" in line for line in lines)


def test_old_results_read_as_model_and_infer_takes_the_yaml(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["groups", str(BASE), "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0] == "benchmark,arch,file,device,backbone,neck,head,preprocess,NMS,model,total,busy,wall,host,"
        "busy %,bound"
    )
    assert (
        out[1].startswith("yolov8n-fp16-bs1-640,sm90-nvidia-h200,")
        and ",,,,46.848,,1127.018,1173.863," in out[1]
    )
    pytest.importorskip("ultralytics")
    assert main(["groups", str(BASE), "--format", "csv", "--infer"]) == 0
    inferred = capsys.readouterr().out.splitlines()
    assert "backbone,neck,head,preprocess,NMS,total" in inferred[0]
    assert ",cuda,539.969,281.35,305.634,46.848,,1173.863," in inferred[1]


def test_one_benchmark_from_two_files_shows_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["groups", str(BASE), str(SLOWED)]) == 0
    out = capsys.readouterr().out
    assert "file" in out and BASE.name in out and SLOWED.name in out
    assert "arch" not in out.split("\n")[1]  # one architecture: no arch column


def test_cpu_rows_are_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cpu = dataclasses.replace(measurement({"model.0": 900.0, "input": 10.0}, wall=1000.0), device="cpu")
    cpu = dataclasses.replace(cpu, arch="cpu-x86_64")
    path = results(tmp_path / "cpu.json", Entry("t.py::test", cpu, bench_fields("t.py::test")))
    assert main(["groups", str(path), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "| 91 % | op-bound |" in out
    assert "On CPU rows (device cpu) the times are of CPU operators" in out


def test_busy_over_wall_has_no_host_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cpu = measurement({"model.0": 5000.0}, wall=1000.0, arch="cpu-x86_64")
    cpu = dataclasses.replace(cpu, device="cpu")
    path = results(tmp_path / "cpu.json", Entry("t.py::test", cpu, bench_fields("t.py::test")))
    assert main(["groups", str(path), "--format", "md"]) == 0
    assert "| 5000.0 | 5000.0 | 1000.0 | — | 500 % | ops > wall |" in capsys.readouterr().out


def test_cold_start_records_are_left_out_and_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(BASE.read_text())
    committed = sorted(ROOT.glob("baselines/*/0001_kernelgate.json"))
    entries = [e for path in committed for e in baseline.load(path).values()]
    cold = [e.measurement.benchmark for e in entries if coldverdict.record_of(e) is not None]
    assert cold  # the committed baseline holds cold starts too
    assert main(["groups", *map(str, committed), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "yolov8n-fp16-bs1-640 |" in out and not any(f"| {name} |" in out for name in cold)
    assert main(["groups", str(tmp_path / "missing.json")]) == 2
    assert "cannot be read" in capsys.readouterr().err
    data["benchmarks"] = []
    (tmp_path / "empty.json").write_text(json.dumps(data))
    assert main(["groups", str(tmp_path / "empty.json")]) == 2
    assert "no kernel benchmark in" in capsys.readouterr().err


def test_the_frame_keeps_numbers(tmp_path: Path) -> None:
    table = report_groups.frame([dataclasses.replace(entry(BASE).measurement, groups=YOLOV8N_GROUPS)])
    assert table.loc[0, "backbone"] == pytest.approx(539.969, abs=1e-3)
    assert table.loc[0, "busy %"] == pytest.approx(100 * 1173.863 / 3982.0255, abs=1e-3)
    assert list(table.columns)[:4] == ["benchmark", "arch", "file", "device"]


def test_files_in_a_deep_checkout_are_named_relative_to_their_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-checkout-folder"] * 8)
    (deep / "old").mkdir(parents=True)
    (deep / "new").mkdir()
    shutil.copy(BASE, deep / "old" / BASE.name)
    shutil.copy(SLOWED, deep / "new" / BASE.name)
    assert main(["groups", str(deep / "old" / BASE.name), str(deep / "new" / BASE.name)]) == 0
    out = capsys.readouterr().out
    assert f"old/{BASE.name}" in out and f"new/{BASE.name}" in out
    assert "a-rather-long" not in out
