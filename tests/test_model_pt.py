"""Users' own .pt files: loaded with weights_only=True where possible; unpickling only when trusted."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from kernelgate.models.yolo import CheckpointError, layers_of, load_pt  # noqa: E402


def tiny() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())


class Payload:
    """What a malicious .pt can carry: unpickling it calls os.mkdir(marker)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


def test_a_state_dict_loads_safely_into_the_model_you_build(tmp_path: Path) -> None:
    path = tmp_path / "weights.pt"
    source = tiny()
    torch.save(source.state_dict(), path)
    target = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    loaded = load_pt(path, into=target)
    assert loaded is target and not loaded.training
    assert torch.equal(loaded[0].weight, source[0].weight)


def test_a_nested_state_dict_and_a_module_file_load_into_the_model(tmp_path: Path) -> None:
    path = tmp_path / "lightning.pt"
    torch.save({"state_dict": tiny().state_dict(), "epoch": 3}, path)
    assert torch.equal(load_pt(path, into=tiny())[0].bias, tiny()[0].bias)


def test_a_file_that_would_run_code_is_refused_without_running_it(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    marker = tmp_path / "code-ran"
    torch.save({"model": Payload(marker)}, path)
    with pytest.raises(CheckpointError) as info:
        load_pt(path)
    assert not marker.exists()
    message = str(info.value)
    assert message.startswith(f"{path}: torch.load(weights_only=True) refused it (")
    assert "unpickling it can run any code the file carries" in message
    assert "--kernelgate-trust-pt" in message
    assert "torch.save(model.state_dict(), 'weights.pt')" in message


def test_trusting_such_a_file_runs_its_code_which_is_why_it_is_opt_in(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    marker = tmp_path / "code-ran"
    torch.save({"model": Payload(marker)}, path)
    with pytest.raises(CheckpointError, match=r"state dict .* has no architecture"):
        load_pt(path, trust=True)
    assert marker.is_dir()  # the file's code ran


def test_a_whole_pickled_module_needs_trust(tmp_path: Path) -> None:
    path = tmp_path / "module.pt"
    torch.save(tiny(), path)
    with pytest.raises(CheckpointError, match="--kernelgate-trust-pt"):
        load_pt(path)
    model = load_pt(path, trust=True)
    assert isinstance(model, torch.nn.Sequential) and not model.training
    assert layers_of(model).types == {"0": "Conv2d", "1": "ReLU"}


def test_an_ultralytics_checkpoint_needs_trust_and_then_gives_its_layers(tmp_path: Path) -> None:
    pytest.importorskip("ultralytics")
    os.environ.setdefault("YOLO_OFFLINE", "1")
    from ultralytics.nn.tasks import DetectionModel

    path = tmp_path / "yolov8n-custom.pt"
    model = DetectionModel("yolov8n.yaml", verbose=False).half()  # type: ignore[no-untyped-call]
    torch.save({"model": model, "ema": None, "epoch": -1, "optimizer": None}, path)
    with pytest.raises(CheckpointError, match="refused it"):
        load_pt(path)
    loaded = load_pt(path, trust=True)
    assert isinstance(loaded, DetectionModel)
    assert next(loaded.parameters()).dtype == torch.float32 and not loaded.training
    layers = layers_of(loaded).types
    assert (layers["model.0"], layers["model.22"], len(layers)) == ("Conv", "Detect", 23)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "not a loadable torch file"),
        (b"PK\x03\x04 truncated zip", "not a loadable torch file"),
    ],
)
def test_a_broken_file_is_named(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "broken.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=says) as info:
        load_pt(path, trust=True)
    assert str(info.value).startswith(f"{path}: ")


def test_a_missing_file_and_a_state_dict_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no such file"):
        load_pt(tmp_path / "nowhere.pt")
    path = tmp_path / "weights.pt"
    torch.save(tiny().state_dict(), path)
    with pytest.raises(CheckpointError, match=r"a state dict \(2 entries\) has no architecture.*into=model"):
        load_pt(path)


def test_weights_that_do_not_fit_the_model(tmp_path: Path) -> None:
    path = tmp_path / "weights.pt"
    torch.save(tiny().state_dict(), path)
    other = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3))
    with pytest.raises(CheckpointError, match="the weights do not fit the model"):
        load_pt(path, into=other)


SUITE = """
def test_checkpoint(kernelgate):
    kernelgate.checkpoint("tiny.pt", precision="fp32", imgsz=32)
"""


def test_the_fixture_gates_a_pt_file_only_with_the_trust_option(pytester: pytest.Pytester) -> None:
    torch.save(tiny(), pytester.path / "tiny.pt")
    pytester.makepyfile(test_suite=SUITE)
    args = ("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cpu", "--kernelgate-iterations=2")
    refused = pytester.runpytest(*args, "--kernelgate-save")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*CheckpointError: tiny.pt: torch.load(weights_only=True) refused it*"])
    trusted = pytester.runpytest(*args, "--kernelgate-save", "--kernelgate-trust-pt")
    trusted.assert_outcomes(passed=1)
    assert list(pytester.path.glob("baselines/cpu-*/0001_kernelgate.json"))


def test_a_pt_in_the_matrix_builds_at_its_precision_and_only_when_trusted(tmp_path: Path) -> None:
    from kernelgate.models.yolo import YoloSpec, build_detection_model

    path = tmp_path / "net.pt"
    torch.save(tiny(), path)  # a whole pickled module: needs trust
    spec = YoloSpec(str(path), "bf16", channels_last=True, shape=(3, 16, 16))
    assert spec.id == "net-bf16-bs1-3x16x16-cl"
    with pytest.raises(CheckpointError, match="--kernelgate-trust-pt"):
        build_detection_model(spec, "cpu")
    net = build_detection_model(spec, "cpu", trust=True)
    assert net[0].weight.dtype == torch.bfloat16 and not net.training
    assert net[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert not any(p.requires_grad for p in net.parameters())
