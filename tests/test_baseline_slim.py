"""Schema 2: a slim main file, its samples beside it (xz), SUMMARY.md; nothing lost, nothing trusted.

The committed baselines are real H200 and H100 data: schema 2 must give back their schema-1 text
byte for byte, and every verdict that the gate draws from them must be the same.
"""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, META, entry, measurement

from kernelgate.baseline import slim, summary
from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME, BaselineError
from kernelgate.config import GateConfig
from kernelgate.measure.results import combine
from kernelgate.offline import judge
from kernelgate.verdict.compare import compare

REPO = Path(__file__).resolve().parents[1]
COMMITTED = sorted((REPO / "baselines").glob(f"sm*/{FILE_NAME}"))
V8 = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
V11 = "benchmarks/test_yolo.py::test_yolo[yolo11n-fp16-bs1-640]"
QUICK_BUDGET = 500_000  # the quick set of one architecture, every file of the baseline
FULL_BUDGET = 2_000_000  # the full matrix of one architecture


def three_rounds() -> baseline.Entry:
    rounds = [
        measurement(
            {"model.0": [100.0 + r, 101.0, 99.0], "model.1": 50.0}, {"model.0.conv :: gemm<64, 128>": 80.5}
        )
        for r in range(3)
    ]
    return entry(V8, combine(rounds))


def saved(tmp_path: Path, *entries: baseline.Entry) -> Path:
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, list(entries) or [three_rounds(), entry(V11)], arch=ARCH, **META)
    return path


def test_a_save_writes_a_slim_main_file_the_samples_beside_it_and_the_summary(tmp_path: Path) -> None:
    path = saved(tmp_path)
    main = json.loads(path.read_text())
    side = slim.sidecar_path(path)
    assert side.name == "0001_kernelgate.samples.json.xz"
    assert summary.path_for(path).read_text().startswith(f"# kernelgate baseline: {ARCH}\n")
    record = main["benchmarks"][1]["extra_info"]["kernelgate"]
    assert "kernels" not in record and '"samples": [' not in path.read_text()
    assert record["layers"][0]["time_us"] == {
        "median": 101.0,
        "n": 9,
        "p10": 99.0,
        "p90": 101.2,
        "round_medians": [100.0, 101.0, 101.0],
        "rounds": [3, 3, 3],
    }
    content = lzma.decompress(side.read_bytes())
    assert main["kernelgate"]["samples"]["sha256"] == slim.digest(content)
    moved = json.loads(content)["benchmarks"][V8]
    assert moved["samples"]["/layers/0/time_us"] == [
        100.0,
        101.0,
        99.0,
        101.0,
        101.0,
        99.0,
        102.0,
        101.0,
        99.0,
    ]
    assert moved["kernels"][0]["name"] == "gemm<64, 128>"
    assert main["benchmarks"][1]["stats"]["mean"] == 0.0023  # pytest-benchmark's fields as they were


def test_a_saved_file_loads_back_equal(tmp_path: Path) -> None:
    path = saved(tmp_path)
    loaded = baseline.load(path, ARCH)
    assert loaded[V8].measurement == three_rounds().measurement
    assert loaded[V8].benchmark["extra_info"]["kernelgate"] == three_rounds().measurement.to_json()
    assert loaded[V11].measurement == entry(V11).measurement


def test_fields_the_record_does_not_know_pass_through_both_files(tmp_path: Path) -> None:
    """A field added to the measurement later (a distribution or anything else) is kept as it is."""
    doc = baseline.document([three_rounds()], ARCH, **META)
    record = doc["benchmarks"][0]["extra_info"]["kernelgate"]
    record["signature"] = {"model.0": "conv/bn/silu"}
    record["layers"][0]["host_us"] = {"median": 7.0, "n": 2, "samples": [6.0, 8.0]}
    path = tmp_path / ARCH / FILE_NAME
    baseline.write_document(path, doc)
    main = json.loads(path.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]
    assert main["signature"] == {"model.0": "conv/bn/silu"}
    assert main["layers"][0]["host_us"] == {"median": 7.0, "n": 2}
    back = baseline.read_document(path)["benchmarks"][0]["extra_info"]["kernelgate"]
    assert slim.drop_derived(back) == record


def test_a_pointer_escapes_slashes_and_tildes() -> None:
    record = {"a/b": {"~x": {"median": 1.0, "n": 1, "samples": [1.0]}}}
    main, side = slim.split_record(record)
    assert list(side["samples"]) == ["/a~1b/~0x"]
    assert slim.join_record(main, side) == record


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda side, main: side.unlink(), "its samples file 0001_kernelgate.samples.json.xz is missing"),
        (lambda side, main: side.write_bytes(b"not xz"), "is not xz-compressed data"),
        (
            lambda side, main: side.write_bytes(lzma.compress(b'{"benchmarks": {}}')),
            "is not the one it was written with (SHA-256",
        ),
        (
            lambda side, main: main.write_text(
                main.read_text().replace('"round_medians": [', '"round_medians": [9, ', 1)
            ),
            "round_medians = [9, ",
        ),
    ],
    ids=["missing", "not-xz", "other-samples-file", "edited-round-median"],
)
def test_a_damaged_pair_is_refused_naming_the_file_and_the_fix(
    tmp_path: Path, damage: Any, message: str
) -> None:
    path = saved(tmp_path)
    damage(slim.sidecar_path(path), path)
    with pytest.raises(BaselineError, match="re-record it with") as info:
        baseline.load(path, ARCH)
    assert message in str(info.value)


def test_samples_that_do_not_fit_the_main_file_are_refused(tmp_path: Path) -> None:
    path = saved(tmp_path)
    content = json.loads(lzma.decompress(slim.sidecar_path(path).read_bytes()))
    content["benchmarks"][V8]["samples"]["/layers/7/time_us"] = [1.0]
    blob = slim.encode(content)
    slim.sidecar_path(path).write_bytes(slim.compress(blob))
    path.write_text(path.read_text().replace(json.loads(path.read_text())["kernelgate"]["samples"]["sha256"],
                                             slim.digest(blob)))  # fmt: skip
    with pytest.raises(BaselineError, match=r"does not fit it: .*yolov8n.*IndexError"):
        baseline.load(path, ARCH)


def test_nan_in_the_samples_file_is_refused(tmp_path: Path) -> None:
    path = saved(tmp_path)
    text = lzma.decompress(slim.sidecar_path(path).read_bytes()).replace(b"102.0", b"NaN", 1)
    slim.sidecar_path(path).write_bytes(slim.compress(text))
    digest = json.loads(path.read_text())["kernelgate"]["samples"]["sha256"]
    path.write_text(path.read_text().replace(digest, slim.digest(text)))
    with pytest.raises(BaselineError, match="NaN is not a number a baseline may hold"):
        baseline.load(path, ARCH)


def test_a_file_with_its_records_inline_still_loads(tmp_path: Path) -> None:
    """Schema 1, and schema 2 written as one file (baseline.dumps of a document): samples inline."""
    for version in (1, 2):
        doc = baseline.document([three_rounds()], ARCH, **META)
        doc["kernelgate"]["schema_version"] = version
        path = tmp_path / str(version) / ARCH / FILE_NAME
        baseline.write_atomic(path, baseline.dumps(doc))
        assert baseline.load(path, ARCH)[V8].measurement == three_rounds().measurement


# --- the committed baselines: real GPU data ---------------------------------------------------------


def full_text(path: Path) -> str:
    """The committed schema-2 baseline written back as the schema-1 file it was migrated from."""
    doc = baseline.read_document(path)
    for bench in doc["benchmarks"]:
        slim.drop_derived(bench["extra_info"]["kernelgate"])
    doc["kernelgate"]["schema_version"] = 1
    # the same document without the writer's layout (indented, numbers compacted): what is read back is
    # the same, and the layout took 2.4 of this test's 20 CPU-s (2-core CI-like machine, 2026-11-27)
    return json.dumps(doc, ensure_ascii=False)


@pytest.mark.parametrize("path", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_a_committed_baseline_is_written_as_its_writer_writes_it(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read and written again, the three files are the committed ones: the main file and the summary
    byte for byte, the samples file's content by its digest (xz's bytes may differ between builds).
    The content is compared before compression: xz at the writer's preset took 5 s of the 2-core CI
    machine for the H100 file, and the round trip through xz is tested above on small files."""
    monkeypatch.setattr(slim, "compress", lambda content: content)
    text, content, summary_text = baseline.written(path, baseline.read_document(path))
    assert text == path.read_text()
    assert summary_text == summary.path_for(path).read_text()
    assert slim.digest(content) == slim.digest(slim.decompress(slim.sidecar_path(path).read_bytes()))


@pytest.mark.parametrize("path", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_a_committed_baseline_fits_its_size_budget(path: Path) -> None:
    files = [path, slim.sidecar_path(path), summary.path_for(path)]
    size = sum(f.stat().st_size for f in files)
    kernel_benchmarks = [b for b in baseline.load(path).values() if b.measurement.layers]
    budget = QUICK_BUDGET if len(kernel_benchmarks) <= 8 else FULL_BUDGET
    print(f"{path.parent.name}: {size:,} bytes for {len(kernel_benchmarks)} configurations")
    assert size <= budget


def test_the_verdicts_of_real_baselines_are_those_of_their_schema_1_files(tmp_path: Path) -> None:
    """Each committed baseline against itself and against the other GPU's, read from its schema-1
    text and from schema 2: every pair of the offline judge (case and comparison) and, GPU against
    GPU (which the judge refuses), every delta of the comparison of each configuration (verdict,
    p-value, noise), as --kernelgate-allow-other-gpu would compare them, is the same."""
    assert len(COMMITTED) >= 2
    full = {}
    for path in COMMITTED:
        copy_path = tmp_path / path.parent.name / FILE_NAME
        baseline.write_atomic(copy_path, full_text(path))
        full[path] = baseline.load(copy_path)
    slim_entries = {path: baseline.load(path) for path in COMMITTED}
    config = GateConfig()
    verdicts: dict[str, int] = {}
    tests: dict[str, int] = {}
    for base in COMMITTED:
        for current in COMMITTED:
            a = judge(full[base], full[current], config, "base")
            b = judge(slim_entries[base], slim_entries[current], config, "base")
            assert [(p.case, p.comparison) for p in a] == [(p.case, p.comparison) for p in b]
            if base == current:  # the judge compared each configuration, as below: the same call
                continue
            for name, entry_b in slim_entries[current].items():
                if name not in slim_entries[base] or not entry_b.measurement.layers:
                    continue
                one = compare(full[base][name].measurement, full[current][name].measurement, config)
                two = compare(slim_entries[base][name].measurement, entry_b.measurement, config)
                assert one == two
                for d in two.deltas:
                    p = "no test" if d.p_value is None else "p < 0.01" if d.p_value < 0.01 else "p >= 0.01"
                    verdicts[d.verdict.value] = verdicts.get(d.verdict.value, 0) + 1
                    tests[p] = tests.get(p, 0) + 1
    print(f"{sum(tests.values())} deltas equal; verdicts {verdicts}; Mann-Whitney {tests}")
    assert verdicts["regressed"] > 0 and tests["p < 0.01"] > 0  # H100 against H200 does differ


@pytest.mark.parametrize("path", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_pytest_benchmark_compare_reads_a_committed_baseline(path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pytest_benchmark.cli import main; main()",
            "compare",
            str(path),
            "--columns=min,median",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "test_yolo[yolov8n-fp16-bs1-640]" in done.stdout
