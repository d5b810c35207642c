"""profile.run tells a failing profiler (ProfilerError) from a failing model (its own exception)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from kernelgate.measure import profile  # noqa: E402

SCHEDULE = profile.Schedule(wait=0, warmup=1, active=1)


class ModelError(RuntimeError):
    pass


def net() -> Any:
    return torch.nn.Sequential(torch.nn.Linear(4, 4)).eval()


def test_a_model_error_passes_through_unchanged(tmp_path: Path) -> None:
    model = net()
    raised = ModelError("CUDA error: an illegal memory access was encountered (simulated)")

    def step() -> None:
        raise raised

    with pytest.raises(ModelError) as info:
        profile.run(step, model, gpu=False, schedule=SCHEDULE, trace_path=tmp_path / "t.json")
    assert info.value is raised
    assert info.value.__cause__ is None


def test_a_profiler_error_is_a_profiler_error_naming_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED (simulated)")

    monkeypatch.setattr(profile, "_profile", broken)
    with pytest.raises(profile.ProfilerError) as info:
        profile.run(lambda: None, net(), gpu=False, schedule=SCHEDULE, trace_path=tmp_path / "t.json")
    assert str(info.value).startswith(
        "torch.profiler failed, so nothing was measured: "
        "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED (simulated)"
    )


def test_a_profiler_that_fails_while_stopping_after_the_model_failed_reports_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @contextmanager
    def stopping_fails(**kwargs: Any) -> Iterator[Any]:
        try:
            yield type("Prof", (), {"step": lambda self: None})()
        finally:
            raise RuntimeError("profiler stop failed")  # what a broken profiler does

    monkeypatch.setattr(torch.profiler, "profile", stopping_fails)
    raised = ModelError("out of memory (simulated)")

    def step() -> None:
        raise raised

    with pytest.raises(ModelError) as info:
        profile.run(step, net(), gpu=False, schedule=SCHEDULE, trace_path=tmp_path / "t.json")
    assert info.value is raised


def test_no_trace_written_is_a_profiler_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile, "_profile", lambda *args, **kwargs: None)
    with pytest.raises(profile.ProfilerError, match="wrote no trace"):
        profile.run(lambda: None, net(), gpu=False, schedule=SCHEDULE, trace_path=tmp_path / "t.json")
