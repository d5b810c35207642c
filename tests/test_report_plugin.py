"""Reports from a pytest session (CPU, a small torch module): baseline traces kept, report folder written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

SUITE = """
import torch
from kernelgate.models.layers import Layers

LAYERS = Layers(
    {"firstconv": "Conv2d", "midrelu": "ReLU", "lastconv": "Conv2d"},
    {"firstconv": "backbone", "midrelu": "neck", "lastconv": "head"},
)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.firstconv = torch.nn.Conv2d(3, 16, 3)
        self.midrelu = torch.nn.ReLU()
        self.lastconv = torch.nn.Conv2d(16, 16, 3)

    def forward(self, x):
        return self.lastconv(self.midrelu(self.firstconv(x)))


def test_tiny(kernelgate):
    kernelgate.module(Net().eval(), torch.rand(1, 3, 48, 48), LAYERS, name="tiny")
"""

# 15 profiled forwards a side, not the CPU's default 5: with 5 a side the Mann-Whitney test is
# significant (p=0.008 < 0.01) only when no sample of one side passes one of the other's, and a
# preempted forward of the baseline (the scheduler's slice of a few ms inside a 0.2 ms conv) left
# lastconv at +2264 %, p=0.2, ambiguous, in CI on 2026-11-26
ARGS = (
    "-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cpu", "--benchmark-min-rounds=2",
    "--kernelgate-iterations=15",
)  # fmt: skip
# The last conv run 30 more times per forward (+5 ms or more on a CPU): far over any CPU noise, with a
# wide threshold and a floor of 1 ms that firstconv (~0.1 ms) does not reach when another process
# shares the cores (a 100 µs floor did: 2 of 5 runs of the suite, 2026-11-25, and once on 2026-11-26)
# the screen alone (no same-host judge: this tests the reports; tests/test_samehost_e2e.py the judge)
SLOW = (
    "--kernelgate-slow-layer=lastconv:30", "--kernelgate-threshold=100%", "--kernelgate-floor-us=1000",
    "--kernelgate-no-confirm",
)  # fmt: skip

LOOSE = """
[tool.kernelgate]
layer_threshold = "1000%"
kernel_threshold = "1000%"
total_threshold = "1000%"
host_threshold = "1000%"
host_layer_threshold = "1000%"
wall_threshold = "1000%"
floor_us = 100000.0
kernel_floor_us = 100000.0
host_floor_us = 100000.0
wall_floor_us = 100000.0
"""


def test_save_regress_redact_and_pass(pytester: pytest.Pytester) -> None:
    """One session of each kind, in order (each a pytest run of its own, in this process)."""
    pytester.makepyfile(test_suite=SUITE)
    saved = pytester.runpytest(*ARGS, "--kernelgate-save")
    saved.assert_outcomes(passed=1)
    # on a CPU the profiled forwards may run slower than the timed ones: "ops > wall", no host time
    saved.stdout.fnmatch_lines(["where the time goes (medians):", "tiny: wall * CPU ops * (* %)*"])
    check_saved_trace(pytester.path)
    (path,) = pytester.path.glob("baselines/cpu-*/0001_kernelgate.json")
    record = json.loads(path.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]
    assert record["groups"] == {"firstconv": "backbone", "midrelu": "neck", "lastconv": "head"}

    regressed = pytester.runpytest(*ARGS, *SLOW)
    regressed.assert_outcomes(failed=1)
    check_regression_report(pytester.path, regressed)

    redacted = pytester.runpytest(*ARGS, *SLOW, "--kernelgate-redact", "--kernelgate-report-dir=out")
    redacted.assert_outcomes(failed=1)
    redacted.stdout.fnmatch_lines(["*│ tiny * │ lastconv *regressed*", "report: out/report.md*"])
    check_redacted(Path(pytester.path, "out"))

    # nothing can fail: every threshold and floor far over CPU noise (a kernel's default floor is not:
    # midrelu's relu went over it once with the suite's two workers and a busy loop on the 2 cores)
    pytester.makepyprojecttoml(LOOSE)
    passed = pytester.runpytest(*ARGS)
    passed.assert_outcomes(passed=1)
    assert passed.ret == 0, passed.stdout.str()[-3000:]
    markdown = (pytester.path / ".kernelgate" / "report" / "report.md").read_text()
    assert markdown.splitlines()[1].startswith("### ✅ kernelgate: no regression in 1 benchmark(s) on cpu-")
    assert not list((pytester.path / ".kernelgate" / "report" / "traces").glob("*"))


def check_saved_trace(root: Path) -> None:
    (trace,) = root.glob("baselines/cpu-*/traces/tiny.pt.trace.json.gz")
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == 1 and doc["kernelgate"]["excerpt"].startswith("iteration ")
    assert any(e.get("name") == "kg/lastconv" for e in doc["traceEvents"])


def check_regression_report(root: Path, result: pytest.RunResult) -> None:
    result.stdout.fnmatch_lines(
        [
            "*kernelgate*",
            "*│ tiny * │ lastconv *regressed*",
            "report: .kernelgate/report/report.md (PR comment), .kernelgate/report/report.html (plots), "
            ".kernelgate/report/report.json (for tools)",
            "traces of regressed benchmarks in .kernelgate/report/traces/: "
            "tiny.baseline.pt.trace.json.gz, tiny.current.pt.trace.json.gz",
        ]
    )
    folder = root / ".kernelgate" / "report"
    markdown = (folder / "report.md").read_text()
    # lastconv ran 31 times per forward; CPU noise may push another layer over too, never lastconv under.
    verdict = markdown.splitlines()[1]
    assert verdict.startswith("### ❌ kernelgate: ") and " slower in tiny on cpu-" in verdict
    assert "% `lastconv` Conv2d" in verdict
    assert "`lastconv` Conv2d" in markdown and "traces/tiny.current.pt.trace.json.gz" in markdown
    assert "<summary>CPU op time per layer group: backbone " in markdown and "GPU busy" not in markdown
    result.stdout.fnmatch_lines(["tiny: wall * CPU ops * (* %)*"])
    doc = json.loads((folder / "report.json").read_text())
    assert doc["failed"] and [lay["name"] for lay in doc["benchmarks"][0]["layers"] if lay["failing"]] == [
        "lastconv"
    ]
    assert "<svg" in (folder / "report.html").read_text()


def check_redacted(folder: Path) -> None:
    paths = [*folder.glob("report.*"), *folder.glob("report-data.json"), *folder.glob("traces/*")]
    assert len(paths) == 6
    for path in paths:
        data = path.read_bytes()
        text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode()
        for name in ("firstconv", "midrelu", "lastconv", "Conv2d", "aten::conv2d"):
            assert name not in text, f"{name} in {path.name}"
