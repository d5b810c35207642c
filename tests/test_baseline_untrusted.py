"""Baseline files are untrusted input: bad merges, hand edits, other machines' files, other versions.

Each defect gives a BaselineError that names the file and the fix; saving never loses entries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import filelock
import pytest
from factories import ARCH, entry, measurement

from kernelgate.baseline import store as baseline
from kernelgate.baseline.errors import REPLACE_CMD
from kernelgate.baseline.store import FILE_NAME, RECORD_CMD, BaselineError, Entry
from kernelgate.measure.results import Measurement

V8 = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
V11 = "benchmarks/test_yolo.py::test_yolo[yolo11n-fp16-bs1-640]"
OTHER_ARCH = "sm80-nvidia-a100-sxm4-80gb"
KG = ["benchmarks", 0, "extra_info", "kernelgate"]

META: dict[str, Any] = {
    "machine_info": {"node": "gpu-runner-1"},
    "commit_info": {"id": "c651edc"},
    "created": "2026-11-21T07:30:07+00:00",
    "pytest_benchmark_version": "5.2.3",
}


def text_of(entries: list[Entry], arch: str = ARCH) -> str:
    return baseline.dumps(baseline.document(entries, arch, **META))


def valid() -> dict[str, Any]:
    m = measurement({"model.0": [100.0, 101.0, 99.0, 100.0, 100.0]}, {"model.0.conv :: gemm": 80.0})
    data: dict[str, Any] = json.loads(text_of([entry(V8, m)]))
    return data


def at(data: Any, keys: list[Any]) -> Any:
    for key in keys:
        data = data[key]
    return data


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def loads_with_error(tmp_path: Path, text: str, arch: str | None = None) -> str:
    path = put(tmp_path / ARCH / FILE_NAME, text)
    with pytest.raises(BaselineError) as info:
        baseline.load(path, arch)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return message


# --- text that is JSON only to a lenient parser ------------------------------------------------------


def test_duplicate_keys_are_refused_not_silently_collapsed(tmp_path: Path) -> None:
    """A conflict resolved by keeping both sides gives duplicate keys; json.loads keeps the last."""
    text = text_of([entry(V8)]).replace('"schema_version": 2', '"schema_version": 2, "schema_version": 2', 1)
    message = loads_with_error(tmp_path, text)
    assert "key 'schema_version' appears twice in one object" in message
    assert f"'{REPLACE_CMD}'" in message


def test_duplicate_keys_deep_inside_a_measurement_are_refused(tmp_path: Path) -> None:
    text = text_of([entry(V8)]).replace('"iterations": 5,', '"iterations": 5,\n "iterations": 6,', 1)
    assert "key 'iterations' appears twice" in loads_with_error(tmp_path, text)


def test_a_benchmark_listed_twice_is_refused(tmp_path: Path) -> None:
    data = valid()
    data["benchmarks"].append(data["benchmarks"][0])
    assert f"benchmarks[1] repeats '{V8}' (a bad merge?)" in loads_with_error(tmp_path, json.dumps(data))


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(tmp_path: Path, number: str) -> None:
    """NaN compares false with everything: a NaN baseline would never regress."""
    text = text_of([entry(V8)]).replace("[100.0, 101.0", f"[{number}, 101.0", 1)
    text = text.replace('"samples": [100.0, 100.0, 100.0, 100.0, 100.0]', f'"samples": [{number}]', 1)
    assert f"{number} is not a number a baseline may hold" in loads_with_error(tmp_path, text)


def test_an_overflowing_number_is_refused(tmp_path: Path) -> None:
    data = valid()
    text = json.dumps(data).replace('"samples": [100.0, 101.0, 99.0, 100.0, 100.0]', '"samples": [1e999]', 1)
    assert "samples must be finite and 0 or more" in loads_with_error(tmp_path, text)


# --- hand edits ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "value", "says"),
    [
        (
            [*KG, "layers", 0, "time_us", "median"],
            50.0,
            "layers[0].time_us: median = 50.0 but its samples give 100",
        ),
        ([*KG, "total_us", "p90"], 1.0, "total_us: p90 = 1.0 but its samples give"),
        ([*KG, "kernels", 0, "time_us", "n"], 3, "kernels[0].time_us: n = 3 but there are 5 samples"),
        ([*KG, "total_us", "median"], "fast", "total_us: median = 'fast'"),
        ([*KG, "busy_us", "samples"], [10.0, -1.0], "busy_us.samples must be finite and 0 or more"),
        ([*KG, "busy_us", "samples"], "100", "busy_us.samples must be a list of numbers"),
        ([*KG, "busy_us", "samples"], [True, 1.0], "busy_us.samples must be a list of numbers"),
        ([*KG, "reliable"], "yes", "'reliable' must be true or false"),
        ([*KG, "layers"], {"model.0": 1}, "'layers' is dict, not a list"),
    ],
    ids=[
        "median",
        "p90",
        "n",
        "median-text",
        "negative",
        "string-samples",
        "bool-sample",
        "reliable",
        "layers",
    ],
)
def test_hand_edited_summaries_and_values_are_refused(
    tmp_path: Path, keys: list[Any], value: Any, says: str
) -> None:
    data = valid()
    at(data, keys[:-1])[keys[-1]] = value
    message = loads_with_error(tmp_path, json.dumps(data))
    assert "benchmarks[0] is malformed" in message
    assert says in message


def test_summaries_may_be_left_out_and_the_samples_rule(tmp_path: Path) -> None:
    data = valid()
    for key in ("median", "p10", "p90", "n"):
        del at(data, KG)["total_us"][key]
    path = put(tmp_path / ARCH / FILE_NAME, json.dumps(data))
    assert baseline.load(path)[V8].measurement.total.median == 100.0


def test_an_entry_marked_unreliable_loads_as_unreliable(tmp_path: Path) -> None:
    data = valid()
    at(data, KG)["reliable"] = False
    path = put(tmp_path / ARCH / FILE_NAME, json.dumps(data))
    m = baseline.load(path)[V8].measurement
    assert not m.reliable
    assert m.unreliable_reasons == ("marked unreliable, no reason given",)


# --- architecture ------------------------------------------------------------------------------------


def test_a_file_of_another_architecture_is_refused_naming_both_keys(tmp_path: Path) -> None:
    """An A100 baseline copied into the H200 folder would compare unlike with unlike."""
    m = measurement({"model.0": 100.0}, arch=OTHER_ARCH)
    message = loads_with_error(tmp_path, text_of([entry(V8, m)], arch=OTHER_ARCH), arch=ARCH)
    assert f"holds baselines of {OTHER_ARCH}, but this machine's key is {ARCH}" in message
    assert f"move the file to {tmp_path / OTHER_ARCH}/" in message
    assert RECORD_CMD in message


def test_an_entry_of_another_architecture_inside_a_file_is_refused(tmp_path: Path) -> None:
    odd = measurement({"model.0": 100.0}, arch=OTHER_ARCH)
    text = text_of([entry(V8), entry(V11, odd)])
    message = loads_with_error(tmp_path, text, arch=ARCH)
    assert f"({V11}) was measured on {OTHER_ARCH}, but the file is {ARCH}'s" in message


def test_a_file_without_an_architecture_key_is_refused(tmp_path: Path) -> None:
    data = valid()
    del data["kernelgate"]["arch"]
    assert "no architecture key ('kernelgate.arch' is None)" in loads_with_error(tmp_path, json.dumps(data))


def test_the_file_of_this_architecture_loads(tmp_path: Path) -> None:
    path = put(tmp_path / ARCH / FILE_NAME, text_of([entry(V8)]))
    assert list(baseline.load(path, ARCH)) == [V8]


# --- schema versions and migration ------------------------------------------------------------------


def test_a_newer_schema_is_refused_and_not_replaceable(tmp_path: Path) -> None:
    data = valid()
    data["kernelgate"]["schema_version"] = baseline.SCHEMA_VERSION + 1
    path = put(tmp_path / ARCH / FILE_NAME, json.dumps(data))
    with pytest.raises(BaselineError, match="written by a newer kernelgate") as info:
        baseline.load(path)
    assert "pip install -U kernelgate" in str(info.value)
    assert info.value.replaceable is False
    before = path.read_text()
    with pytest.raises(BaselineError, match="newer kernelgate"):
        baseline.save(path, [entry(V11)], arch=ARCH, replace_unreadable=True, **META)
    assert path.read_text() == before  # --kernelgate-save does not drop what it cannot read


@pytest.mark.parametrize("version", ["1", 1.0, True, None])
def test_a_schema_version_that_is_not_a_whole_number_is_refused(tmp_path: Path, version: Any) -> None:
    data = valid()
    data["kernelgate"]["schema_version"] = version
    assert "is not a whole number" in loads_with_error(tmp_path, json.dumps(data))


def v0_document() -> dict[str, Any]:
    """A synthetic schema 0: before 'unlinked_kernels' was named so, and without 'arch' at the top."""
    data = valid()
    data["kernelgate"] = {"schema_version": 0}
    record = at(data, KG)
    record["unlinked"] = record.pop("unlinked_kernels")
    return data


def v0_to_v1(data: dict[str, Any]) -> dict[str, Any]:
    data["kernelgate"]["arch"] = data["benchmarks"][0]["extra_info"]["kernelgate"]["arch"]
    for bench in data["benchmarks"]:
        record = bench["extra_info"]["kernelgate"]
        record["unlinked_kernels"] = record.pop("unlinked")
    return data


def test_an_old_schema_without_a_migration_is_refused(tmp_path: Path) -> None:
    message = loads_with_error(tmp_path, json.dumps(v0_document()))
    assert "schema version 0 cannot be upgraded (migrations exist from: 1)" in message


def test_an_old_schema_is_migrated_on_load_and_saved_as_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(baseline.MIGRATIONS, 0, v0_to_v1)
    path = put(tmp_path / ARCH / FILE_NAME, json.dumps(v0_document()))
    loaded = baseline.load(path, ARCH)
    assert loaded[V8].measurement == Measurement.from_json(at(valid(), KG))
    baseline.save(path, [entry(V11)], arch=ARCH, **META)
    saved = json.loads(path.read_text())
    assert saved["kernelgate"]["schema_version"] == baseline.SCHEMA_VERSION
    assert saved["kernelgate"]["arch"] == ARCH
    assert sorted(b["fullname"] for b in saved["benchmarks"]) == [V11, V8]
    assert "unlinked" not in at(saved, ["benchmarks", 1, "extra_info", "kernelgate"])


def test_a_migration_that_fails_names_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(baseline.MIGRATIONS, 0, v0_to_v1)
    data = v0_document()
    del data["benchmarks"][0]["extra_info"]["kernelgate"]["unlinked"]
    message = loads_with_error(tmp_path, json.dumps(data))
    assert "schema version 0 could not be upgraded (KeyError: 'unlinked')" in message


def test_migrate_does_not_modify_its_input() -> None:
    data = v0_document()
    copy = json.loads(json.dumps(data))
    migrated = baseline.migrate(Path("x.json"), data, {**baseline.MIGRATIONS, 0: v0_to_v1})
    assert data == copy
    assert migrated["kernelgate"]["schema_version"] == baseline.SCHEMA_VERSION


# --- saving ----------------------------------------------------------------------------------------


def test_save_keeps_other_entries_and_writes_a_lock_file_beside_the_baseline(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    assert baseline.save(path, [entry(V8)], arch=ARCH, **META) == []
    assert baseline.save(path, [entry(V11)], arch=ARCH, **META) == []
    assert sorted(baseline.load(path, ARCH)) == [V11, V8]
    assert sorted(p.name for p in path.parent.iterdir()) == [
        f".{FILE_NAME}.lock",
        FILE_NAME,
        "0001_kernelgate.samples.json.xz",
        "SUMMARY.md",
    ]


def test_save_refuses_measurements_of_another_architecture(tmp_path: Path) -> None:
    odd = measurement({"model.0": 1.0}, arch=OTHER_ARCH)
    with pytest.raises(
        ValueError, match=rf"cannot save measurements of \['{OTHER_ARCH}'\] into the baseline of"
    ):
        baseline.save(tmp_path / FILE_NAME, [entry(V8, odd)], arch=ARCH, **META)


def test_save_over_an_unreadable_file_fails_unless_asked_to_replace_it(tmp_path: Path) -> None:
    path = put(tmp_path / ARCH / FILE_NAME, "{")
    with pytest.raises(BaselineError, match="not valid JSON") as info:
        baseline.save(path, [entry(V8)], arch=ARCH, **META)
    assert "Nothing was saved: --kernelgate-save replaces an unreadable file (keeping only the " in str(
        info.value
    )
    assert str(info.value).endswith(f"only when asked: {REPLACE_CMD}")
    assert path.read_text() == "{"
    notes = baseline.save(path, [entry(V8)], arch=ARCH, replace_unreadable=True, **META)
    assert notes == [
        "replaced an unreadable baseline, as --kernelgate-replace-unreadable asked: "
        + str(info.value).split(" Nothing was saved")[0]
    ]
    assert list(baseline.load(path)) == [V8]


def test_save_over_another_architectures_file_replaces_it_only_when_asked(tmp_path: Path) -> None:
    path = put(
        tmp_path / ARCH / FILE_NAME, text_of([entry(V8, measurement({}, arch=OTHER_ARCH))], OTHER_ARCH)
    )
    with pytest.raises(BaselineError, match=f"holds baselines of {OTHER_ARCH}"):
        baseline.save(path, [entry(V11)], arch=ARCH, **META)
    baseline.save(path, [entry(V11)], arch=ARCH, replace_unreadable=True, **META)
    assert list(baseline.load(path, ARCH)) == [V11]


def test_a_held_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    path.parent.mkdir()
    holder = filelock.FileLock(baseline.lock_path(path))  # another holder (flock: per open file)
    timeout = pytest.raises(BaselineError, match=r"another process has held its lock .* for 0\.2 s")
    with holder, timeout as info:
        baseline.save(path, [entry(V8)], arch=ARCH, timeout=0.2, **META)
    assert info.value.replaceable is False
    assert not path.exists()
    baseline.save(path, [entry(V8)], arch=ARCH, timeout=0.2, **META)  # released: saves
    assert list(baseline.load(path)) == [V8]
