"""The configuration matrix: sets, groups, ids, selection (no torch, no model)."""

from __future__ import annotations

import pytest

from kernelgate.models import matrix
from kernelgate.models.yolo import YoloSpec


def test_default_ids_are_unchanged_and_each_axis_adds_one_suffix() -> None:
    assert YoloSpec().id == "yolov8n-fp16-bs1-640"  # the id of the baselines recorded before the matrix
    spec = YoloSpec("yolo11n", "amp-bf16", 8, 320, "graph", "inference", True, True)
    assert spec.id == "yolo11n-amp-bf16-bs8-320-cl-fused-graph"
    assert YoloSpec(stage="pipeline", mode="compile").id == "yolov8n-fp16-bs1-640-compile-pipeline"
    assert YoloSpec("path/to/my-net.yaml").id == "my-net-fp16-bs1-640"
    assert YoloSpec("weights/best.pt").name == "best"
    assert YoloSpec("mypkg.nets:tiny", "fp32", shape=(3, 224, 224)).id == "tiny-fp32-bs1-3x224x224"


def test_spec_dtype_and_autocast_follow_the_precision() -> None:
    assert (YoloSpec(precision="fp16").dtype, YoloSpec(precision="fp16").autocast) == ("float16", None)
    assert (YoloSpec(precision="bf16").dtype, YoloSpec(precision="bf16").autocast) == ("bfloat16", None)
    assert (YoloSpec(precision="amp-fp16").dtype, YoloSpec(precision="amp-fp16").autocast) == (
        "float32",
        "float16",
    )
    assert YoloSpec(batch=4, imgsz=320).input_shape == (4, 3, 320, 320)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"precision": "int8"}, "precision 'int8': use one of fp32, fp16, bf16, amp-fp16, amp-bf16"),
        ({"mode": "trt"}, "mode 'trt': use one of eager, graph, compile"),
        ({"stage": "all"}, "stage 'all'"),
        ({"batch": 0}, "batch 0"),
        ({"mode": "graph", "stage": "pipeline"}, "a CUDA graph cannot capture"),
    ],
)
def test_spec_refuses_unknown_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        YoloSpec(**kwargs)  # type: ignore[arg-type]


def test_a_group_is_the_product_of_its_axes_and_sets_drop_duplicates() -> None:
    table = {
        "pr": [
            {"models": ["yolov8n", "yolo11n"], "precisions": ["fp16", "fp32"], "modes": ["eager", "graph"]},
            {"models": ["yolov8n"], "precisions": ["fp16"]},  # already in the first group
            {"models": ["yolov8n"], "batches": [8], "channels_last": [True]},
        ]
    }
    parsed = matrix.parse(table)
    ids = [s.id for s in parsed.sets["pr"]]
    assert len(ids) == 2 * 2 * 2 + 1
    assert ids[:3] == ["yolov8n-fp16-bs1-640", "yolov8n-fp16-bs1-640-graph", "yolov8n-fp32-bs1-640"]
    assert ids[-1] == "yolov8n-fp16-bs8-640-cl"
    assert "pr" in parsed.sets and "quick" not in parsed.sets  # own sets replace the built-in ones


def test_the_machine_picks_the_set_unless_one_is_named() -> None:
    parsed = matrix.parse({"on_gpu": "a", "on_cpu": "b", "a": [{"models": ["yolov8n"]}], "b": [{}]})
    assert [s.id for s in parsed.cases(None, gpu=True)] == ["yolov8n-fp16-bs1-640"]
    assert parsed.cases(None, gpu=False) == (YoloSpec(),)
    assert parsed.cases("a", gpu=False) == parsed.cases(None, gpu=True)
    with pytest.raises(matrix.MatrixError, match="no matrix set 'nightly'; the sets are a, b"):
        parsed.cases("nightly", gpu=True)


def test_built_in_sets_when_pyproject_has_none() -> None:
    parsed = matrix.parse({})
    quick = [s.id for s in parsed.cases(None, gpu=True)]
    assert "yolov8n-fp16-bs1-640-graph" in quick and "yolov8n-fp16-bs1-640-pipeline" in quick
    assert [s.id for s in parsed.cases(None, gpu=False)] == ["yolov8n-fp32-bs1-160", "yolo11n-fp32-bs1-160"]


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ({"model": ["yolov8n"]}, r"unknown key\(s\) \['model'\]"),
        ({"models": "yolov8n"}, "models must be a non-empty list"),
        ({"batches": ["8"]}, "batches = \\['8'\\]: every value must be a int"),
        ({"channels_last": [1]}, "every value must be a bool"),
        ({"precisions": ["fp8"]}, "#1: precision 'fp8'"),
    ],
)
def test_bad_groups_are_refused_with_where_and_why(group: dict[str, object], message: str) -> None:
    with pytest.raises(matrix.MatrixError, match=message):
        matrix.parse({"nightly": [group]})


def test_a_set_must_be_an_array_of_tables() -> None:
    with pytest.raises(matrix.MatrixError, match=r"\[\[tool.kernelgate.matrix.nightly\]\]"):
        matrix.parse({"nightly": {"models": ["yolov8n"]}})


def test_only_narrows_by_any_axis_with_singular_or_plural_names() -> None:
    specs = matrix.parse({}).cases("quick", gpu=True)
    only = matrix.parse_only(["mode=graph", "models=yolo11n"])
    assert only == {"mode": {"graph"}, "model": {"yolo11n"}}
    assert [s.id for s in matrix.select(specs, only)] == ["yolo11n-fp16-bs1-640-graph"]
    assert len(matrix.select(specs, matrix.parse_only(["precision=fp16,fp32"]))) == len(specs)
    assert matrix.select(specs, matrix.parse_only(["channels_last=true"])) == []


@pytest.mark.parametrize("text", ["mode", "colour=red", "mode="])
def test_only_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(matrix.MatrixError, match="use AXIS=VALUE"):
        matrix.parse_only([text])


def test_graph_mode_is_skipped_without_a_gpu_with_the_reason() -> None:
    assert matrix.skip_reason(YoloSpec(mode="graph"), gpu=False) == (
        "yolov8n-fp16-bs1-640-graph: CUDA-graph mode needs a CUDA GPU"
    )
    assert matrix.skip_reason(YoloSpec(mode="graph"), gpu=True) is None
    assert matrix.skip_reason(YoloSpec(mode="compile"), gpu=False) is None


def test_this_repository_sets_meet_the_issue(pytestconfig: pytest.Config) -> None:
    parsed = matrix.load(pytestconfig.rootpath / "pyproject.toml")
    full = parsed.cases("full", gpu=True)
    axes = {f: {getattr(s, f) for s in full} for f in ("model", "precision", "batch", "mode", "stage")}
    assert {"yolov8n", "yolov8s", "yolo11n", "yolo26n", "yolov5nu", "rtdetr-l"} <= axes["model"]
    assert {"fp32", "fp16", "bf16", "amp-fp16"} <= axes["precision"]
    assert {1, 8, 32} <= axes["batch"] and {"eager", "graph", "compile"} <= axes["mode"]
    assert {"inference", "pipeline"} <= axes["stage"]
    assert any(s.channels_last for s in full) and any(s.fuse for s in full)
    assert set(parsed.cases("quick", gpu=True)) <= set(full)  # the PR subset is part of the nightly set
