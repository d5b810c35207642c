"""No silent pass: dropped profiler events, a failing profiler, nothing compared, no GPU.

Each scenario runs the gate on a tiny plain module in a pytest run of its own (in this process, CPU),
with the fault injected by a conftest.py of the test project for the length of the run: the trace
loses the first iteration's events (as Kineto's "Out-of-range" records do), or torch.profiler raises
(as it does where CUPTI may not run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

SUITE = """
import torch
from kernelgate.models.layers import Layers


def test_tiny(kernelgate):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
    kernelgate.module(net, torch.rand(1, 3, 32, 32), Layers({"0": "Conv2d", "1": "ReLU"}), name="tiny")
"""

# The first KG_DROP_ATTEMPTS profiles lose every event of their first iteration.
DROP_EVENTS = """
import dataclasses, os
import kernelgate.measure.trace

_parse = kernelgate.measure.trace.parse
_profiles = []


def dropping_parse(path, gpu):
    parsed = _parse(path, gpu)
    _profiles.append(path)
    if len(_profiles) > int(os.environ.get("KG_DROP_ATTEMPTS", "0")):
        return parsed
    first = min(parsed.steps, key=lambda s: s.start_us)
    kept = tuple(a for a in parsed.activities if not first.start_us <= a.start_us <= first.end_us)
    return dataclasses.replace(parsed, activities=kept)


kernelgate.measure.trace.parse = dropping_parse


def pytest_unconfigure(config):
    kernelgate.measure.trace.parse = _parse
"""

PROFILER_FAILS = """
import kernelgate.measure.profile


_profile = kernelgate.measure.profile._profile


def failing_profile(*args, **kwargs):
    raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (simulated)")


kernelgate.measure.profile._profile = failing_profile


def pytest_unconfigure(config):
    kernelgate.measure.profile._profile = _profile
"""

ARGS = ("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cpu", "--kernelgate-iterations=3")


def baseline_file(root: Path) -> Path:
    (path,) = root.glob("baselines/cpu-*/0001_kernelgate.json")
    return path


def test_a_profile_with_dropped_events_is_measured_again_or_fails_never_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(DROP_EVENTS)

    # Only the first profile lost events: measured again, the second profile is saved, with a warning.
    monkeypatch.setenv("KG_DROP_ATTEMPTS", "1")
    saved = pytester.runpytest(*ARGS, "--kernelgate-save")
    saved.assert_outcomes(passed=1, warnings=1)
    saved.stdout.fnmatch_lines(
        [
            "*UnreliableProfileWarning: kernelgate: the first profile of 'tiny' was unreliable "
            "(CPU ops per iteration*"
        ]
    )
    path = baseline_file(pytester.path)
    record = json.loads(path.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]
    assert record["reliable"] is True and record["unreliable_reasons"] == []
    before = path.read_text()

    # Every profile loses events: the benchmark fails, saying why, and is not compared.
    monkeypatch.setenv("KG_DROP_ATTEMPTS", "99")
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*kernelgate: tiny on cpu-*: the profile cannot be trusted, so it was not compared:",
            "*- CPU ops per iteration differ (iteration 0: 0; the other 2: *): the profiler dropped events",
            "*- measured twice, unreliable both times",
            "*trace: .kernelgate/traces/test_tiny.json",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= kernelgate =*",
            "unreliable profile, not compared: tiny",
            "*FAILED kernelgate: nothing was compared: 1 gate benchmark(s) collected, "
            "none compared (1 unreliable)*",
        ]
    )
    assert path.read_text() == before
    results = pytester.path / ".kernelgate" / "results"
    (current,) = results.glob("cpu-*/0001_kernelgate.json")
    kept = json.loads(current.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]
    assert kept["reliable"] is False  # kept for inspection, marked


def test_an_unreliable_profile_with_policy_warn_is_still_not_a_silent_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(DROP_EVENTS)
    monkeypatch.setenv("KG_DROP_ATTEMPTS", "99")
    result = pytester.runpytest(*ARGS, "--kernelgate-save", "--kernelgate-on-unreliable=warn")
    result.assert_outcomes(passed=1, warnings=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # nothing was saved: the run fails
    result.stdout.fnmatch_lines(
        [
            "*NotComparedWarning: kernelgate: tiny on cpu-*: the profile cannot be trusted, "
            "so it was not saved:",
            "*FAILED kernelgate: nothing was saved: 1 gate benchmark(s) collected, "
            "none saved (1 unreliable)*",
        ]
    )
    assert not list(pytester.path.glob("baselines/*/*.json"))


def test_a_failing_profiler_fails_the_benchmark_naming_the_cause(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(PROFILER_FAILS)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernelgate: tiny: torch.profiler failed, so nothing was measured: "
            "RuntimeError: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (simulated). "
            "Check that CUPTI can profile here*"
        ]
    )


SKIPPED = """
import pytest


@pytest.mark.skip(reason="no GPU on this runner")
def test_gated(kernelgate):
    pass


def test_plain():
    pass
"""


def test_a_run_that_compares_nothing_fails_by_default_and_may_warn(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SKIPPED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*FAILED kernelgate: nothing was compared: 1 gate benchmark(s) collected, "
            "none compared (1 skipped). "
            'A gate that compared nothing checked nothing.*on_nothing_compared = "warn"*'
        ]
    )
    warned = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate-on-nothing-compared=warn")
    assert warned.ret == pytest.ExitCode.OK
    warned.stdout.fnmatch_lines(
        ["*warning: kernelgate: nothing was compared: 1 gate benchmark(s) collected*"]
    )


def test_a_run_without_gate_benchmarks_is_not_judged(pytester: pytest.Pytester) -> None:
    """Unit tests in a project with [tool.kernelgate] are not a gate run: no outcome, no failure."""
    pytester.makepyfile(test_suite="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate")
    assert result.ret == pytest.ExitCode.OK
    assert "nothing was compared" not in result.stdout.str()


def test_benchmark_skip_compares_nothing_and_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SKIPPED.replace('@pytest.mark.skip(reason="no GPU on this runner")\n', ""))
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate", "--benchmark-skip")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAILED kernelgate: nothing was compared*(1 skipped)*"])


def test_requiring_a_gpu_where_there_is_none_is_an_error_not_a_pass(pytester: pytest.Pytester) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cuda")
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*UsageError: --kernelgate-device=cuda, but torch sees no CUDA GPU*",
            "*FAILED kernelgate: nothing was compared*(1 failed before comparing)*",
        ]
    )


@pytest.mark.parametrize("value", ["0", "-3"])
def test_profiling_no_iterations_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_suite="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate", f"--kernelgate-iterations={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--kernelgate-iterations {value}: profile at least 1 iteration*"])


TARGET = "benchmarks/test_yolo.py::test_yolo[a b]"


def test_a_baseline_entry_that_is_unreliable_or_does_not_add_up_is_not_a_yardstick() -> None:
    from dataclasses import replace

    from factories import entry, measurement

    from kernelgate.config import GateConfig
    from kernelgate.plugin.screen import check_entry as _check_baseline_entry
    from kernelgate.plugin.session import Options, State

    state = State(GateConfig(), Options())
    good = measurement(
        {"model.0": 60.0, "model.1": 40.0}, {"model.0.conv :: k": 60.0, "model.1.cv :: k": 40.0}
    )
    assert _check_baseline_entry(entry("b::t", good), good, state, "baselines/x/f.json", "b::t") is None
    total = replace(good.total, samples=(100.0, 100.0, 90.0, 100.0, 100.0))
    edited = replace(good, total=total, busy=total)
    with pytest.raises(pytest.fail.Exception) as info:
        _check_baseline_entry(entry("b::t", edited), good, state, "baselines/x/f.json", TARGET)
    assert str(info.value) == (
        "kernelgate: yolov8n-fp16-bs1-640 is not compared with its baseline in baselines/x/f.json: "
        "the baseline is unreliable (iteration 2: the layers add up to 100.000 µs, the total is 90.000 µs; "
        "iteration 2: the kernels add up to 100.000 µs, the total is 90.000 µs). "
        "If the baseline is what is wrong, re-record it on this machine: "
        "pytest 'benchmarks/test_yolo.py::test_yolo[a b]' --kernelgate-save "
        "(in rounds: kernelgate record --rounds 3 -- 'benchmarks/test_yolo.py::test_yolo[a b]')"
    )
    marked = replace(good, unreliable_reasons=("kernels per iteration differ",))
    with pytest.raises(
        pytest.fail.Exception, match=r"the baseline is unreliable \(kernels per iteration differ"
    ):
        _check_baseline_entry(entry("b::t", marked), good, state, "f.json", "b::t")


def test_collect_only_is_not_judged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SKIPPED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate", "--collect-only")
    assert result.ret == pytest.ExitCode.OK
    assert "nothing was compared" not in result.stdout.str()
