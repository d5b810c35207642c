"""The user's invocation as a child pytest gets it: everything but the test selection and the
options that write the parent's files; paths inside the head's checkout moved into the base's."""

from __future__ import annotations

from pathlib import Path

from kernelgate.plugin.invocation import child_args, mapped, without


def test_plugins_ini_overrides_and_options_travel_the_selection_does_not() -> None:
    args = [
        "benchmarks", "-p", "myplugin", "-pother", "-o", "kernelgate_x=1", "-c", "ci.toml",
        "--rootdir=/repo", "-k", "yolov8n and fp16", "-m", "gpu", "-n", "2", "--dist=load",
        "--kernelgate-device=cuda", "--kernelgate-only", "mode=graph", "--benchmark-min-rounds=7",
        "--kernelgate-save", "--kernelgate-out", "/tmp/out", "--junitxml=r.xml", "-x", "-q",
        "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]", "--trust-me", "-kfoo",
    ]  # fmt: skip
    selection = ["benchmarks", "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"]
    assert child_args(args, selection) == [
        "-p", "myplugin", "-pother", "-o", "kernelgate_x=1", "-c", "ci.toml", "--rootdir=/repo",
        "--kernelgate-device=cuda", "--kernelgate-only", "mode=graph", "--benchmark-min-rounds=7",
        "--trust-me",
    ]  # fmt: skip


def test_a_positional_that_is_an_option_value_stays() -> None:
    # "-p benchmarks": the plugin's name happens to equal a selected path
    assert child_args(["-p", "benchmarks", "benchmarks"], ["benchmarks"]) == ["-p", "benchmarks"]
    assert child_args(["--kernelgate-only", "model=x", "model=x"], ["model=x"]) == [
        "--kernelgate-only",
        "model=x",
    ]


def test_paths_inside_the_head_move_into_the_base() -> None:
    head, base = Path("/work/repo"), Path("/tmp/judge/base")
    args = ["-c", "/work/repo/ci/pytest.toml", "--rootdir=/work/repo", "--basetemp=/tmp/x", "-p", "plug"]
    assert mapped(args, head, base) == [
        "-c", "/tmp/judge/base/ci/pytest.toml", "--rootdir=/tmp/judge/base", "--basetemp=/tmp/x",
        "-p", "plug",
    ]  # fmt: skip


def test_without_drops_an_option_in_both_forms() -> None:
    args = ["--kernelgate-slow-layer", "model.2:3", "-q", "--kernelgate-slow-layer=model.4", "-p", "x"]
    assert without(args, "--kernelgate-slow-layer") == ["-q", "-p", "x"]
