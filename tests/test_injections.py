"""tools/injections.py: the changes a sensitivity run commits in a head, and how their outcomes are read
from pytest's JUnit XML (synthetic XML here; the GPU runs are in docs/sensitivity.md)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from factories import tools_script


@pytest.fixture(scope="module")
def inj() -> ModuleType:
    return tools_script("injections")


README_HEADLINE = (
    "kernelgate: yolov8n-fp16-bs1-640: REGRESSION (same-host A/B, 3 process(es) a side): base -> head on "
    "this runner: model.6 +3.0 %; the head launches otherwise in each of its 3 process(es) and no base "
    "process does: new spin_kernel in model.6, 1 a forward"
)


def test_the_layers_a_headline_names_in_its_order(inj: ModuleType) -> None:
    assert inj.named_layers(README_HEADLINE) == ["model.6"]
    two = (
        "x: REGRESSION (...): base -> head on this runner: total +0.4 %, model.4 +5.1 % (origin), "
        "host model.9 +140.2 %, wall +3.0 %; speeds"
    )
    assert inj.named_layers(two) == ["model.4", "host model.9"]
    assert inj.named_layers("x: PASS: base and head agree on this runner") == []


def test_each_regression_set_has_six_kinds_each_in_another_layer_of_each_model(inj: ModuleType) -> None:
    regressions = [c for name in ("a", "b", "c") for c in inj.SETS[name]]
    assert len(regressions) >= 20
    assert {c.kind for c in regressions} == {"kernel", "cudnn", "bilinear", "silu", "sleep", "sync"}
    assert len({(c.config, c.layer) for c in regressions}) == len(regressions)
    # a CUDA graph replays kernels, not Python: no host-side change there
    assert not [c for c in regressions if c.config.endswith("-graph") and c.kind in ("sleep", "sync")]


def xml(tmp_path: Path, cases: dict[str, str]) -> str:
    body = "".join(
        f'<testcase classname="benchmarks.test_yolo" name="test_yolo[{config}]">{inner}</testcase>'
        for config, inner in cases.items()
    )
    path = tmp_path / "run.xml"
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite>{body}</testsuite></testsuites>', "utf-8")
    return str(path)


def failure(headline: str) -> str:
    return f'<failure message="{headline}">{headline}\n  model.4: stored baseline ...</failure>'


def test_a_regression_is_right_only_failed_with_its_layer_named_alone(
    inj: ModuleType, tmp_path: Path
) -> None:
    head = "kernelgate: {c}: REGRESSION (same-host A/B, 3 process(es) a side): base -> head on this runner: "
    v8, v8_32, v11 = "yolov8n-fp16-bs1-640", "yolov8n-fp32-bs1-640", "yolo11n-fp16-bs1-640"
    path = xml(
        tmp_path,
        {
            v8: failure(head.format(c=v8) + "model.4 +6.0 % (origin)"),  # set a: kernel after model.4
            # another layer named beside the changed one
            v8_32: failure(head.format(c=v8_32) + "host model.8 +150.0 %, model.9 +3.0 %"),
            v11: "",  # passed: missed
        },
    )
    found: dict[str, Any] = {o.change.config: o for o in inj.outcomes("a", path)}
    assert found[v8].right
    assert not found[v8_32].right and found[v8_32].layers == ["host model.8", "model.9"]
    assert found[v11].result == "passed" and not found[v11].right
    assert found["yolo26n-fp16-bs1-640"].result == "missing"
    row = "| yolov8n-fp16-bs1-640 | three extra elementwise kernels after model.4 | failed | model.4 | yes |"
    assert row in inj.table("a", list(found.values()))


def test_a_small_change_is_right_only_when_its_test_passed(inj: ModuleType, tmp_path: Path) -> None:
    v8, v11 = "yolov8n-fp16-bs1-640", "yolo11n-fp16-bs1-640"
    answer = "kernelgate: x: PASS (...): their times agree&#10;  model.22: stored baseline 317 µs -> 318 µs"
    path = xml(
        tmp_path,
        {
            v8: f'<properties><property name="kernelgate" value="{answer}"/></properties>',
            v11: failure("x: INCONCLUSIVE"),
        },
    )
    found = {o.change.config: o for o in inj.outcomes("small", path)}
    assert found[v8].right and found[v8].answer.startswith("model.22: stored baseline")
    assert not found[v11].right


def test_the_injected_code_changes_what_a_tiny_yolo_runs(
    inj: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("ultralytics")
    from kernelgate.models.yolo import YoloSpec
    from kernelgate.plugin import fixture

    monkeypatch.setattr(fixture, "build_detection_model", fixture.build_detection_model)
    namespace: dict[str, Any] = {}
    exec(inj.conftest("c"), namespace)
    spec = YoloSpec(model="yolov8n", precision="fp32", imgsz=64)
    plain = namespace["_build"](spec, "cpu")
    namespace["_CHANGES"][spec.id] = ("bilinear", 10)
    changed = fixture.build_detection_model(spec, "cpu")
    assert plain.model[10].mode == "nearest" and changed.model[10].mode == "bilinear"
    with torch.no_grad():
        assert changed(torch.zeros(1, 3, 64, 64)) is not None


def test_a_regression_that_passed_with_its_layer_within_its_limits_is_told_apart(
    inj: ModuleType, tmp_path: Path
) -> None:
    # set b's cuDNN off in yolov8n fp16 model.7, as an H100 answered it (2026-12-08): faster on the
    # GPU, the host under its threshold; a pass with the same layer over its limit is a miss
    answer = (
        "kernelgate: x: PASS (...): their times agree within their limits&#10;"
        "  host model.7: stored baseline 103.7 µs -> 274.1 µs (+164.2 %); base -> head on this runner "
        "196.1 µs -> 272.3 µs (+38.9 %), limit +98.0 µs: within its limit "
        "(each process: base 178.2 | head 251.3 µs)&#10;"
        "  model.7: stored baseline 21.6 µs -> 18.6 µs (-13.7 %); base -> head on this runner 21.5 µs -> "
        "18.7 µs (-13.3 %), limit +0.5 µs: faster past its limit (each process: base 21.4 | head 18.9 µs)"
    )
    missed = answer.replace("faster past its limit", "over its limit but inside the noise of this runner")
    v8, v8_32 = "yolov8n-fp16-bs1-640", "yolov8n-fp32-bs1-640"
    prop = '<properties><property name="kernelgate" value="{}"/></properties>'
    path = xml(tmp_path, {v8: prop.format(answer), v8_32: prop.format(missed.replace("model.7", "model.12"))})
    found = {o.change.config: o for o in inj.outcomes("b", path)}
    assert not found[v8].right and found[v8].under_thresholds and len(found[v8].answers) == 2
    assert "| no: under its thresholds here |" in inj.table("b", [found[v8]])
    assert not found[v8_32].under_thresholds and "| **no** |" in inj.table("b", [found[v8_32]])
