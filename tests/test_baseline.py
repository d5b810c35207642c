"""Baseline files: stable text, round trip, clear errors, merging, atomic writes, pytest-benchmark compat."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, entry, measurement
from pytest_benchmark.storage.file import FileStorage

from kernelgate.baseline import store as baseline
from kernelgate.baseline.errors import REPLACE_CMD
from kernelgate.baseline.store import FILE_NAME, RECORD_CMD, BaselineError, Entry

REPO = Path(__file__).resolve().parents[1]
FULLNAME = "benchmarks/test_yolo.py::test_yolo[{}]"
V8 = FULLNAME.format("yolov8n-fp16-bs1-640")
V11 = FULLNAME.format("yolo11n-fp16-bs1-640")


def doc(entries: list[Entry]) -> dict[str, Any]:
    return baseline.document(
        entries,
        arch=ARCH,
        machine_info={"node": "gpu-runner-1", "python_version": "3.12.3"},
        commit_info={"id": "c651edc", "dirty": False},
        created="2026-11-21T07:30:07+00:00",
        pytest_benchmark_version="5.2.3",
    )


def write(path: Path, entries: list[Entry]) -> Path:
    baseline.write_atomic(path, baseline.dumps(doc(entries)))
    return path


# --- dumps ------------------------------------------------------------------------------------------


def test_dumps_sorts_keys_and_keeps_number_lists_on_one_line() -> None:
    text = baseline.dumps(
        {"b": {"samples": [1.5, -2.0, 3e-05], "z": 1, "a": []}, "a": ["x", "y"], "c": [[1, 2]]}
    )
    assert text == (
        "{\n"
        '  "a": [\n'
        '    "x",\n'
        '    "y"\n'
        "  ],\n"
        '  "b": {\n'
        '    "a": [],\n'
        '    "samples": [1.5, -2.0, 3e-05],\n'
        '    "z": 1\n'
        "  },\n"
        '  "c": [\n'
        "    [1, 2]\n"
        "  ]\n"
        "}\n"
    )


def test_dumps_of_a_document_has_one_line_per_sample_list() -> None:
    m = measurement({"model.0": [100.0, 101.5, 99.25]}, {"model.0.conv :: gemm<64, 128>": [80.0, 81.0, 79.0]})
    text = baseline.dumps(doc([entry(V8, m)]))
    lines = [line.strip() for line in text.splitlines()]
    assert lines.count('"samples": [100.0, 101.5, 99.25]') == 1  # the layer
    assert lines.count('"samples": [80.0, 81.0, 79.0]') == 1  # the kernel
    assert lines.count('"samples": [100.0, 100.0, 100.0, 100.0, 100.0]') == 2  # total and busy
    top_level = [line.split(":")[0].strip() for line in text.splitlines() if line.startswith('  "')]
    assert top_level == [
        '"benchmarks"',
        '"commit_info"',
        '"datetime"',
        '"kernelgate"',
        '"machine_info"',
        '"version"',
    ]
    assert json.loads(text) == doc([entry(V8, m)])


def test_dumps_keeps_non_ascii_as_is() -> None:
    assert baseline.dumps({"unit": "µs"}) == '{\n  "unit": "µs"\n}\n'


def test_dumps_does_not_change_strings_that_look_like_number_lists() -> None:
    fullname = "benchmarks/test_yolo.py::test_shape[1,3,640,640]"
    text = baseline.dumps(doc([entry(fullname)]))
    assert json.loads(text)["benchmarks"][0]["fullname"] == fullname


# --- document and load --------------------------------------------------------------------------


def test_document_load_round_trip(tmp_path: Path) -> None:
    m8 = measurement({"model.0": [100.0, 101.0, 99.0], "model.1": 50.0}, {"model.0.conv :: gemm": 80.5})
    m11 = measurement({"model.0": 90.0}, {"model.0.conv :: gemm": 70.0}, benchmark="yolo11n-fp16-bs1-640")
    path = write(tmp_path / ARCH / FILE_NAME, [entry(V8, m8), entry(V11, m11)])

    loaded = baseline.load(path)
    assert list(loaded) == [V11, V8]  # sorted by full name
    assert loaded[V8].measurement == m8
    assert loaded[V11].measurement == m11
    assert loaded[V8].fullname == V8
    assert loaded[V8].benchmark["stats"]["mean"] == 0.0023
    assert loaded[V8].benchmark["extra_info"]["kernelgate"] == m8.to_json()

    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["kernelgate"] == {"schema_version": baseline.SCHEMA_VERSION, "arch": ARCH}
    assert (data["datetime"], data["version"]) == ("2026-11-21T07:30:07+00:00", "5.2.3")
    assert data["commit_info"] == {"id": "c651edc", "dirty": False}


def test_layer_groups_are_saved_and_loaded_and_a_bad_table_names_the_file(tmp_path: Path) -> None:
    grouped = dataclasses.replace(
        measurement({"model.0": 100.0, "model.1": 50.0}), groups={"model.0": "backbone", "model.1": "head"}
    )
    path = write(tmp_path / ARCH / FILE_NAME, [entry(V8, grouped), entry(V11)])
    loaded = baseline.load(path)
    assert loaded[V8].measurement.groups == {"model.0": "backbone", "model.1": "head"}
    assert loaded[V11].measurement.groups == {}  # an entry without groups, as older files have
    assert "groups" not in json.loads(path.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]
    path.write_text(path.read_text().replace('"backbone"', "7"))
    with pytest.raises(BaselineError, match=rf"{FILE_NAME}: benchmarks\[1\] is malformed.*'groups'"):
        baseline.load(path)


def test_document_keeps_other_extra_info() -> None:
    e = entry(V8)
    e.benchmark["extra_info"] = {"note": "kept", "kernelgate": {"stale": True}}
    (bench,) = doc([e])["benchmarks"]
    assert bench["extra_info"]["note"] == "kept"
    assert bench["extra_info"]["kernelgate"] == e.measurement.to_json()
    assert e.benchmark["extra_info"]["kernelgate"] == {"stale": True}  # the entry is not modified


@pytest.mark.parametrize("path", sorted(REPO.glob(f"baselines/*/{FILE_NAME}")), ids=lambda p: p.parent.name)
def test_committed_baselines_load_and_are_in_canonical_form(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    entries = baseline.load(path)
    assert entries
    assert {e.measurement.arch for e in entries.values()} == {path.parent.name}
    assert baseline.dumps(json.loads(text)) == text


def valid_text() -> str:
    return baseline.dumps(doc([entry(V8)]))


def edited(change: Any) -> str:
    data = json.loads(valid_text())
    change(data)
    return json.dumps(data)


def _drop(keys: list[Any]) -> Any:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return change


def _set(keys: list[Any], value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


KG = ["benchmarks", 0, "extra_info", "kernelgate"]

BROKEN: list[Any] = [
    pytest.param("", "the file is empty", id="empty"),
    pytest.param("  \n\n", "the file is empty", id="blank"),
    pytest.param(valid_text()[:200], "not valid JSON (line", id="truncated"),
    pytest.param(
        json.dumps(
            {"benchmarks": [], "machine_info": {}, "commit_info": {}, "datetime": "x", "version": "5.2.3"}
        ),
        "no top-level 'kernelgate' table",
        id="plain-pytest-benchmark",
    ),
    pytest.param("[]", "no top-level 'kernelgate' table", id="a-list"),
    pytest.param(edited(_set(["kernelgate", "schema_version"], 99)), "schema version 99", id="schema-99"),
    pytest.param(edited(_drop(["kernelgate", "schema_version"])), "schema version None", id="no-schema"),
    pytest.param(edited(_set(["benchmarks"], {})), "no 'benchmarks' list", id="benchmarks-not-a-list"),
    pytest.param(
        edited(_drop(["benchmarks", 0, "fullname"])), "benchmarks[0] is malformed", id="no-fullname"
    ),
    pytest.param(edited(_drop(KG)), "benchmarks[0] is malformed (KeyError", id="no-measurement"),
    pytest.param(
        edited(_set(["benchmarks", 0, "extra_info"], None)), "benchmarks[0] is malformed", id="null-extra"
    ),
    pytest.param(edited(_drop([*KG, "layers"])), "benchmarks[0] is malformed (KeyError", id="no-layers"),
    pytest.param(
        edited(_set([*KG, "iterations"], "many")), "benchmarks[0] is malformed (ValueError", id="bad-int"
    ),
    pytest.param(
        edited(_set([*KG, "total_us", "samples"], ["fast"])), "benchmarks[0] is malformed", id="bad-sample"
    ),
    pytest.param(edited(_set(["benchmarks", 0], "oops")), "benchmarks[0] is malformed", id="entry-a-string"),
    pytest.param(
        edited(_set([*KG, "environment"], None)),
        "benchmarks[0] is malformed",
        id="null-environment",
    ),
]


@pytest.mark.parametrize(("text", "says"), BROKEN)
def test_load_errors_name_the_file_and_the_fix(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / ARCH / FILE_NAME
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        baseline.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert says in message
    # re-recording over an unreadable file is refused unless asked: the fix names the option (a
    # newer schema's file is never replaced: its message says so)
    fix = f"'{RECORD_CMD}' is refused" if "newer kernelgate" in message else f"'{REPLACE_CMD}'"
    assert fix in message
    assert REPLACE_CMD == "pytest benchmarks --kernelgate-save --kernelgate-replace-unreadable"


def test_load_error_for_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_text(valid_text(), encoding="utf-16")
    with pytest.raises(BaselineError, match=RECORD_CMD):
        baseline.load(path)


def test_load_error_for_a_missing_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / FILE_NAME
    with pytest.raises(BaselineError, match="cannot be read") as info:
        baseline.load(path)
    assert str(info.value).startswith(f"{path}: ")


def test_path_for() -> None:
    assert baseline.path_for(Path("baselines"), "sm90-nvidia-h200") == Path(
        "baselines/sm90-nvidia-h200/0001_kernelgate.json"
    )


# --- merge -----------------------------------------------------------------------------------------


def test_merge_keeps_other_benchmarks_and_replaces_the_same_fullname(tmp_path: Path) -> None:
    v11_old = measurement({"model.0": 90.0}, benchmark="yolo11n")
    v8_old = measurement({"model.0": 100.0})
    path = write(tmp_path / FILE_NAME, [entry(V11, v11_old), entry(V8, v8_old)])
    v8_new = measurement({"model.0": 120.0})
    v5 = measurement({"model.0": 70.0}, benchmark="yolov5n")
    fullname_v5 = FULLNAME.format("yolov5n-fp16-bs1-640")

    merged = {
        e.fullname: e.measurement for e in baseline.merge(path, [entry(V8, v8_new), entry(fullname_v5, v5)])
    }
    assert merged == {V11: v11_old, V8: v8_new, fullname_v5: v5}

    write(path, baseline.merge(path, [entry(V8, v8_new), entry(fullname_v5, v5)]))
    assert {name: e.measurement for name, e in baseline.load(path).items()} == merged


def test_merge_into_no_file_is_the_new_entries(tmp_path: Path) -> None:
    merged = baseline.merge(tmp_path / FILE_NAME, [entry(V8)])
    assert [e.fullname for e in merged] == [V8]


def test_merge_refuses_to_overwrite_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_text("{", encoding="utf-8")
    with pytest.raises(BaselineError, match="not valid JSON"):
        baseline.merge(path, [entry(V8)])


# --- write_atomic ------------------------------------------------------------------------------------


@pytest.fixture
def strict_umask() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def test_write_atomic_creates_folders_leaves_no_temp_files_and_mode_0644(
    tmp_path: Path, strict_umask: None
) -> None:
    path = tmp_path / "baselines" / ARCH / FILE_NAME
    baseline.write_atomic(path, "first\n")
    baseline.write_atomic(path, "second\n")
    assert path.read_text(encoding="utf-8") == "second\n"
    assert sorted(p.name for p in path.parent.iterdir()) == [FILE_NAME]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_write_atomic_failure_keeps_the_old_file_and_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    baseline.write_atomic(path, "good\n")
    with pytest.raises(UnicodeEncodeError):
        baseline.write_atomic(path, "bad \udc80\n")  # a lone surrogate cannot be written as UTF-8
    assert path.read_text(encoding="utf-8") == "good\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]


# --- pytest-benchmark reads it --------------------------------------------------------------------


class LoggerStub:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def warning(self, text: str, *args: Any, **kwargs: Any) -> None:
        self.messages.append(text)

    info = debug = error = warning


def test_pytest_benchmark_file_storage_loads_the_baseline(tmp_path: Path) -> None:
    folder = tmp_path / ARCH
    path = write(folder / FILE_NAME, [entry(V8), entry(V11)])
    logger = LoggerStub()
    loaded = list(FileStorage(folder, logger=logger, default_machine_id=None).load())
    assert logger.messages == []
    assert [(str(rel), data["kernelgate"]["arch"]) for rel, data in loaded] == [(FILE_NAME, ARCH)]
    ((_, data),) = loaded
    assert data == json.loads(path.read_text(encoding="utf-8"))
    assert [b["fullname"] for b in data["benchmarks"]] == [V11, V8]


def test_pytest_benchmark_file_storage_skips_a_broken_file(tmp_path: Path) -> None:
    """The stub is exercised: a file pytest-benchmark cannot read is logged, not returned."""
    (tmp_path / FILE_NAME).write_text("{", encoding="utf-8")
    logger = LoggerStub()
    assert list(FileStorage(tmp_path, logger=logger, default_machine_id=None).load()) == []
    assert len(logger.messages) == 1
