"""Names that become file names: never a path, never hidden, never empty, never too long."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgate.baseline import store as baseline
from kernelgate.baseline.names import MAX_LENGTH, check_component, is_safe, safe_name


@pytest.mark.parametrize(
    "name",
    [
        "test_yolo[yolov8n-fp16-bs1-640]",
        "yolov8n-fp16-bs1-640",
        "sm90-nvidia-h200",
        "a.b_c-1",
        "x" * MAX_LENGTH,
    ],
)
def test_safe_names_are_kept_as_they_are(name: str) -> None:
    assert safe_name(name) == name
    assert is_safe(name)


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("..", ""),
        (".", ""),
        ("", ""),
        ("../../etc/passwd", "_._etc_passwd-"),
        ("test_x[a/b]", "test_x[a_b]-"),
        (".hidden", "hidden-"),
        ("C:\\Windows\\x", "C_Windows_x-"),
        ("model\x00name", "model_name-"),
        ("yolo11n 中文", "yolo11n_-"),
    ],
)
def test_unsafe_names_are_rewritten_with_a_digest(name: str, start: str) -> None:
    safe = safe_name(name)
    assert safe != name
    assert safe.startswith(start)
    assert len(safe.rpartition("-")[2]) == 8  # the digest of the original name
    assert not is_safe(name)


def test_two_names_that_clean_to_the_same_text_keep_different_files() -> None:
    assert safe_name("test[a/b]") != safe_name("test[a:b]")
    assert safe_name("x" * 300) != safe_name("x" * 301)


def test_a_long_non_ascii_name_stays_under_the_file_system_limit() -> None:
    """The old rule (isalnum, 200 characters) allowed 600 bytes of UTF-8: more than the 255 allowed."""
    name = "test_x[" + "é" * 300 + "]"
    safe = safe_name(name)
    assert len(safe.encode()) <= MAX_LENGTH


def test_check_component_names_the_value_and_a_safe_spelling() -> None:
    assert check_component("sm90-nvidia-h200", "architecture key") == "sm90-nvidia-h200"
    with pytest.raises(ValueError, match=r"architecture key '\.\./x' cannot be used .* e\.g\. '_x-"):
        check_component("../x", "architecture key")


def test_baseline_paths_refuse_an_arch_key_that_is_a_path() -> None:
    with pytest.raises(ValueError, match="architecture key"):
        baseline.path_for(Path("baselines"), "../../tmp")
    assert baseline.path_for(Path("b"), "cpu-x86-64-amd") == Path("b/cpu-x86-64-amd/0001_kernelgate.json")


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(max_size=400), st.integers(min_value=10, max_value=200))
def test_property_any_text_gives_one_safe_path_component(name: str, limit: int) -> None:
    safe = safe_name(name, limit)
    assert safe
    assert 1 <= len(safe.encode("utf-8")) <= limit
    assert "/" not in safe and "\\" not in safe and "\x00" not in safe
    assert ".." not in safe
    assert not safe.startswith(".")
    assert Path(safe).name == safe  # one component, nothing a path would reinterpret
    assert safe_name(safe, limit) == safe  # stable: a safe name is kept


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_property_different_names_never_share_a_file(a: str, b: str) -> None:
    if a != b:
        assert safe_name(a) != safe_name(b)
