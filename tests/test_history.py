"""kernelgate history add/show: a results file becomes a night of <dir>/<arch>.jsonl, with the commit,
the date, the host fingerprint, the software versions, and each configuration's total and layers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from history_nights import H200, nights

from kernelgate import cli
from kernelgate.history import nights as store

ROOT = Path(__file__).parent.parent


def results_copy(tmp_path: Path) -> Path:
    """The committed H200 baseline as a results file (the same format): a recorded night."""
    folder = tmp_path / "results" / "sm90-nvidia-h200"
    folder.mkdir(parents=True)
    for f in H200.parent.glob("0001_kernelgate*"):
        shutil.copy(f, folder / f.name)
    return folder / H200.name


def test_a_results_file_becomes_a_night(tmp_path: Path) -> None:
    night = store.night_of(results_copy(tmp_path))
    assert night.arch == "sm90-nvidia-h200"
    assert night.commit == "700e4e39cbeb53e624503ed012898206095b7e7f"
    assert night.date.startswith("2026-11-27")
    # the baseline's rounds come from two H200 hosts; a night keeps its first round's
    assert night.host is not None and night.host.id in {"5c1fae1c", "c1e48464"}
    assert night.host.gpu == "NVIDIA H200" and night.host.driver == "580.159.04"
    assert night.software["torch"] == "2.11.0+cu130" and night.software["cudnn"] == "91900"
    assert len(night.configs) == 36  # the kernel benchmarks; the two cold starts are not kept
    v8 = night.configs["yolov8n-fp16-bs1-640"]
    assert v8.fullname == "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    assert len(v8.total.rounds) == 3 and 1210 < v8.total.median < 1230
    assert "model.9" in v8.layers and len(v8.layers["model.9"].rounds) == 3
    again = store.Night.from_json(json.loads(json.dumps(night.to_json())))
    assert again == night


def test_add_appends_and_replaces_a_rerun_of_the_same_night(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, folder = results_copy(tmp_path), tmp_path / "history"
    assert cli.main(["history", "add", str(results), "--dir", str(folder)]) == 0
    assert cli.main(["history", "add", str(results), "--dir", str(folder)]) == 0  # a re-run: replaced
    args = [
        "history",
        "add",
        str(results),
        "--dir",
        str(folder),
        "--commit",
        "b" * 40,
        "--date",
        "2026-11-28T03:17:00+00:00",
    ]
    assert cli.main(args) == 0
    path = folder / "sm90-nvidia-h200.jsonl"
    stored = store.load(path)
    assert [n.commit[:1] for n in stored] == ["7", "b"]
    assert len(path.read_text().splitlines()) == 2
    capsys.readouterr()
    show = [
        "history",
        "show",
        "--dir",
        str(folder),
        "--benchmark",
        "yolov8n-fp16-bs1-640",
        "--figure",
        "model.9",
    ]
    assert cli.main(show) == 0
    out = capsys.readouterr().out
    assert "sm90-nvidia-h200: 2 night(s)" in out and f"host {stored[0].host_id}" in out and "model.9:" in out


def test_the_store_keeps_nights_in_date_order(tmp_path: Path) -> None:
    made = nights(5)
    for night in reversed(made):
        store.add(tmp_path, night)
    assert store.load(store.path_for(tmp_path, made[0].arch)) == made


def test_a_broken_line_names_the_line_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "sm90-nvidia-h200.jsonl"
    path.write_text(store.dumps(nights(2)) + "{not json\n")
    with pytest.raises(store.HistoryError, match=r"sm90-nvidia-h200.jsonl:3: .*sed -i '3d'"):
        store.load(path)


def test_a_file_without_commit_asks_for_one(tmp_path: Path) -> None:
    results = results_copy(tmp_path)
    doc = json.loads(results.read_text())
    doc["commit_info"] = {}
    results.write_text(json.dumps(doc))
    with pytest.raises(store.HistoryError, match=r"--commit \$\(git rev-parse HEAD\)"):
        store.night_of(results)
    assert cli.main(["history", "add", str(results), "--dir", str(tmp_path / "h")]) == 2


def test_show_without_history_says_how_to_add_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", "show", "--dir", str(tmp_path)]) == 2
    assert "kernelgate history add" in capsys.readouterr().err
