"""The gate on a small plain torch module (no ultralytics): faults, bad baselines, policies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUITE = """
import pytest
import torch
from kernelgate.models.layers import Layers

LAYERS = Layers({"0": "Conv2d", "1": "ReLU", "2": "Conv2d"})


def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3)).eval()


def test_good(kernelgate):
    kernelgate.module(net(), torch.rand(1, 3, 32, 32), LAYERS, name="tiny-good")


def test_crash(kernelgate):
    model = net()
    def boom(x):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)")
    model[1].forward = boom
    kernelgate.module(model, torch.rand(1, 3, 32, 32), LAYERS, name="tiny-crash")
"""

ARGS = ("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cpu", "--benchmark-min-rounds=2")


def baseline_files(root: Path) -> list[Path]:
    return list(root.glob("baselines/cpu-*/0001_kernelgate.json"))


def test_a_crashing_benchmark_fails_alone_and_the_others_still_save(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest(*ARGS, "--kernelgate-save")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_crash*RuntimeError: CUDA out of memory*"])
    (path,) = baseline_files(pytester.path)
    saved = json.loads(path.read_text())
    assert [b["extra_info"]["kernelgate"]["benchmark"] for b in saved["benchmarks"]] == ["tiny-good"]


def test_saving_one_benchmark_keeps_the_others(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.replace("def test_crash", "def _crash"))
    pytester.runpytest(*ARGS, "--kernelgate-save").assert_outcomes(passed=1)
    pytester.makepyfile(
        test_other=SUITE.replace("tiny-good", "tiny-other").replace("def test_crash", "def _c")
    )
    pytester.runpytest(*ARGS, "--kernelgate-save", "test_other.py").assert_outcomes(passed=1)
    (path,) = baseline_files(pytester.path)
    names = sorted(
        b["extra_info"]["kernelgate"]["benchmark"] for b in json.loads(path.read_text())["benchmarks"]
    )
    assert names == ["tiny-good", "tiny-other"]


def test_a_corrupt_baseline_fails_naming_the_file_and_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.replace("def test_crash", "def _crash"))
    pytester.runpytest(*ARGS, "--kernelgate-save").assert_outcomes(passed=1)
    (path,) = baseline_files(pytester.path)
    truncated = path.read_text()[:500]
    path.write_text(truncated)

    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*0001_kernelgate.json: not valid JSON (line *"
            "pytest benchmarks --kernelgate-save --kernelgate-replace-unreadable*"
        ]
    )
    assert path.read_text() == truncated

    # --kernelgate-save alone does not replace it: the file may hold benchmarks this run did not measure
    refused = pytester.runpytest(*ARGS, "--kernelgate-save")
    refused.assert_outcomes(passed=1)
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(
        [
            "*NOT SAVED: *0001_kernelgate.json: not valid JSON*Nothing was saved: --kernelgate-save replaces "
            "an unreadable file (keeping only the benchmarks of this run) only when asked: "
            "pytest benchmarks --kernelgate-save --kernelgate-replace-unreadable"
        ]
    )
    assert path.read_text() == truncated

    saved = pytester.runpytest(*ARGS, "--kernelgate-save", "--kernelgate-replace-unreadable")
    saved.assert_outcomes(passed=1)
    assert saved.ret == pytest.ExitCode.OK
    saved.stdout.fnmatch_lines(
        ["*replaced an unreadable baseline, as --kernelgate-replace-unreadable asked*"]
    )
    assert json.loads(path.read_text())["kernelgate"]["schema_version"] == 2


def test_missing_baseline_can_be_set_to_warn(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.replace("def test_crash", "def _crash"))
    result = pytester.runpytest(*ARGS, "--kernelgate-missing-baseline=warn")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*MissingBaselineWarning: kernelgate: no baseline for 'tiny-good'*"])
    # The test passes, but a run that compared nothing does not: on_nothing_compared decides.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAILED kernelgate: nothing was compared: *(1 without a baseline)*"])


def test_layers_of_a_plain_module_are_attributed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_suite=SUITE.replace("def test_crash", "def _crash")
        + """

def test_layers(kernelgate):
    result = kernelgate.module(net(), torch.rand(1, 3, 32, 32), LAYERS, name="tiny-layers")
    names = [lay.name for lay in result.measurement.layers]
    assert names == ["input", "0", "1", "2"], names
    assert {k.name for k in result.measurement.kernels if k.layer == "0"} == {"aten::conv2d"}
"""
    )
    pytester.runpytest(*ARGS, "--kernelgate-save").assert_outcomes(passed=2)


def test_an_appended_round_that_disagrees_is_refused_unless_kept_with_a_reason(
    pytester: pytest.Pytester,
) -> None:
    """Round 2 runs layer 2 thirty times over (as a GPU shared with another job might): refused, the
    file keeps its one round; kept with --kernelgate-keep-round, the reason is stored in the entry."""
    pytester.makepyfile(test_suite=SUITE.replace("def test_crash", "def _crash"))
    pytester.runpytest(*ARGS, "--kernelgate-save").assert_outcomes(passed=1)
    (path,) = baseline_files(pytester.path)
    before = path.read_text()
    slow = ("--kernelgate-save", "--kernelgate-append", "--kernelgate-slow-layer=2:30")

    refused = pytester.runpytest(*ARGS, *slow)
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(
        ["*NOT SAVED: *nothing was saved: tiny-good: round(s) * disagree with the others beyond what noise *"]
    )
    assert (
        "layer 2: round" in refused.stdout.str()
        and "--kernelgate-keep-round 'REASON'" in refused.stdout.str()
    )
    assert path.read_text() == before

    kept = pytester.runpytest(*ARGS, *slow, "--kernelgate-keep-round", "layer 2 ran 31 times")
    assert kept.ret == pytest.ExitCode.OK
    kept.stdout.fnmatch_lines(["*tiny-good: kept round(s) * (layer 2 ran 31 times)*"])
    (bench,) = json.loads(path.read_text())["benchmarks"]
    assert {r["reason"] for r in bench["extra_info"]["kernelgate_kept_rounds"]} == {"layer 2 ran 31 times"}
    assert len(bench["extra_info"]["kernelgate"]["total_us"]["rounds"]) == 2


def test_keep_round_and_replace_unreadable_come_with_save(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.replace("def test_crash", "def _crash"))
    for args, says in (
        (
            ("--kernelgate-replace-unreadable",),
            "*--kernelgate-replace-unreadable * use it with --kernelgate-save*",
        ),
        (("--kernelgate-keep-round", "x"), "*--kernelgate-keep-round * use it with --kernelgate-save*"),
        (("--kernelgate-save", "--kernelgate-keep-round", " "), "*--kernelgate-keep-round needs the reason*"),
    ):
        result = pytester.runpytest(*ARGS, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([says])
