"""Layer groups: backbone / neck / head of Ultralytics models, stage names, per-group time per iteration."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from factories import measurement
from real_data import BASE, SLOWED, YOLOV8N_GROUPS, entry

from kernelgate.baseline import store as baseline
from kernelgate.measure import attribute, grouped
from kernelgate.measure.results import Dist, LayerStat
from kernelgate.models import groups, matrix
from kernelgate.models import yolo as model
from kernelgate.models.groups import BACKBONE, HEAD, MODEL, NECK, NMS, OTHER, PREPROCESS

ROOT = Path(__file__).parent.parent


def test_yolo_groups_split_at_the_backbone_and_the_last_layer() -> None:
    found = groups.yolo_groups(23, 10)
    assert list(found) == [f"model.{i}" for i in range(23)]
    assert [found[f"model.{i}"] for i in (0, 9, 10, 21, 22)] == [BACKBONE, BACKBONE, NECK, NECK, HEAD]
    assert groups.yolo_groups(2, 5) == {"model.0": BACKBONE, "model.1": HEAD}


@pytest.fixture(scope="module")
def ultralytics_tasks() -> object:
    return pytest.importorskip("ultralytics.nn.tasks")


@pytest.mark.parametrize(
    ("cls", "yaml", "n_layers", "n_backbone", "head_type"),
    [
        ("DetectionModel", "yolov8n", 23, 10, "Detect"),
        ("DetectionModel", "yolov10n", 24, 11, "v10Detect"),
        ("RTDETRDetectionModel", "rtdetr-l", 29, 10, "RTDETRDecoder"),
    ],
)
def test_groups_of_ultralytics_models_built_from_yaml(
    ultralytics_tasks: object, cls: str, yaml: str, n_layers: int, n_backbone: int, head_type: str
) -> None:
    net = getattr(ultralytics_tasks, cls)(f"{yaml}.yaml", verbose=False)
    found = groups.groups_of(net)
    layers = model.layers_of(net)
    assert list(found) == list(layers.types)  # the same names as the layer table
    assert [n for n, g in found.items() if g == HEAD] == [f"model.{n_layers - 1}"]
    assert layers.types[f"model.{n_layers - 1}"] == head_type
    assert [n for n, g in found.items() if g == BACKBONE] == [f"model.{i}" for i in range(n_backbone)]
    assert sum(g == NECK for g in found.values()) == n_layers - n_backbone - 1
    assert groups.yaml_groups(yaml) == found  # the same without building the model


def test_the_test_data_groups_are_yolov8n_s(ultralytics_tasks: object) -> None:
    assert groups.yaml_groups("yolov8n") == YOLOV8N_GROUPS


def test_any_other_module_is_one_group_named_after_its_children() -> None:
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    assert groups.groups_of(net) == {"0": MODEL, "1": MODEL}

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.ReLU())  # no yaml

    assert groups.groups_of(Wrapped()) == {"model.0": MODEL, "model.1": MODEL}


def test_stage_names_map_to_their_groups_whatever_the_model_says() -> None:
    table = {"model.0": BACKBONE, "postprocess": HEAD}
    assert groups.group_of("input", table) == PREPROCESS
    assert groups.group_of("preprocess", {}) == PREPROCESS
    assert groups.group_of("postprocess", table) == NMS
    assert groups.group_of(attribute.UNATTRIBUTED, {}) == OTHER
    assert groups.group_of("model.0", table) == BACKBONE
    assert groups.group_of("model.7", table) == MODEL  # not in the table: the whole model
    assert groups.UNATTRIBUTED == attribute.UNATTRIBUTED


def test_a_group_s_time_is_the_median_of_per_iteration_sums() -> None:
    m = measurement({"model.0": [1.0, 10.0, 1.0], "model.1": [10.0, 1.0, 1.0], "input": [2.0, 2.0, 2.0]})
    m = dataclasses.replace(m, groups={"model.0": BACKBONE, "model.1": BACKBONE})
    found = grouped.group_times(m)
    assert list(found) == [BACKBONE, PREPROCESS]  # in ORDER, not in layer order
    assert found[BACKBONE] == Dist((11.0, 11.0, 2.0))
    assert found[BACKBONE].median == 11.0  # the sum of the layer medians would be 2.0


def test_group_times_keep_the_rounds() -> None:
    rounds = Dist((1.0, 2.0, 3.0, 4.0), (2, 2))
    m = dataclasses.replace(
        measurement(), layers=(LayerStat("model.0", "Conv", rounds), LayerStat("model.1", "C2f", rounds))
    )
    assert grouped.group_times(m)[MODEL] == Dist((2.0, 4.0, 6.0, 8.0), (2, 2))


def test_layers_of_unequal_sample_counts_are_refused() -> None:
    m = measurement({"model.0": [1.0, 2.0], "model.1": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="samples"):
        grouped.group_times(m)


def test_records_without_groups_still_load_and_group_by_stage() -> None:
    records = [
        e.measurement
        for path in [BASE, SLOWED]  # recorded before groups existed
        for e in baseline.load(path).values()
        if e.measurement.layers  # not a cold-start record
    ]
    assert len(records) >= 2
    for m in records:
        assert m.groups == {}
        assert list(grouped.group_times(m)) == [PREPROCESS, MODEL]


def test_the_committed_baselines_carry_their_groups() -> None:
    records = [
        e.measurement
        for path in ROOT.glob("baselines/sm*/0001_kernelgate.json")  # committed (cpu-* are local)
        for e in baseline.load(path).values()
        if e.measurement.layers
    ]
    assert records
    compiled = [m for m in records if [lay.name for lay in m.layers] == ["input", "compiled"]]
    assert len(compiled) >= 4  # the full matrix's torch.compile configurations, on each architecture
    for m in records:
        found = set(grouped.group_times(m))
        if m in compiled:  # one compiled region: Inductor's fused kernels belong to no single layer
            assert found == {PREPROCESS, MODEL}, (m.benchmark, found)
            continue
        assert {BACKBONE, NECK, HEAD, PREPROCESS} <= found, (m.benchmark, found)


def test_a_record_with_groups_splits_the_total() -> None:
    m = dataclasses.replace(entry(BASE).measurement, groups=YOLOV8N_GROUPS)
    found = {g: round(d.median, 1) for g, d in grouped.group_times(m).items()}
    assert found == {BACKBONE: 540.0, NECK: 281.3, HEAD: 305.6, PREPROCESS: 46.8}


@pytest.mark.parametrize(
    ("bench_id", "name"),
    [
        ("yolov8n-fp16-bs1-640", "yolov8n"),
        ("rtdetr-l-fp32-bs4-1280-graph", "rtdetr-l"),
        ("yolov8n-seg-fp16-bs1-640", "yolov8n-seg"),
        ("yolo11n-amp-fp16-bs1-640-graph", "yolo11n"),
        ("yolov8n-bf16-bs8-640-cl-fused", "yolov8n"),
        ("test_my_model", None),
        ("yolov8n-fp16-bs1-640x", None),
    ],
)
def test_model_name_of_a_benchmark_id(bench_id: str, name: str | None) -> None:
    assert matrix.model_name(bench_id) == name


def test_inferred_groups_of_an_old_record(ultralytics_tasks: object) -> None:
    old = entry(BASE).measurement
    assert grouped.inferred(old).groups == YOLOV8N_GROUPS
    with_groups = dataclasses.replace(old, groups={"model.0": HEAD})
    assert grouped.inferred(with_groups) is with_groups  # groups it has are kept
    custom = dataclasses.replace(old, benchmark="my-net")
    assert grouped.inferred(custom) is custom
    unknown = dataclasses.replace(old, benchmark="nosuchmodel-fp16-bs1-640")
    assert grouped.inferred(unknown) is unknown
    bigger = dataclasses.replace(old, layers=(*old.layers, LayerStat("model.40", "Conv", old.total)))
    assert grouped.inferred(bigger) is bigger  # its layers do not fit yolov8n
