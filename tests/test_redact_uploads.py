"""--kernelgate-redact covers every file the gate workflow uploads: report, results, trace excerpts.

A tiny YOLO on the CPU, as in test_readme_walk.py: record a baseline, then a run with a slowed layer
(so the report holds the trace excerpts of a regression) with and without --kernelgate-redact. The
files are those under the paths of gate.yml's upload step, read from the workflow itself; the
names looked for are those of the unredacted results (layers, layer types, modules, kernels) and
the host name, which the traces (``host_name``) and the results (``machine_info.node``) carry.
"""

from __future__ import annotations

import gzip
import json
import lzma
import platform
import re
import shlex
import socket
from pathlib import Path

import pytest
import yaml

from kernelgate.baseline import store as baseline

pytest.importorskip("ultralytics")

ROOT = Path(__file__).parent.parent
GATE = ROOT / ".github" / "workflows" / "kernelgate.yml"  # gate.yml calls it
KEPT = {"", "total", "input", "(unattributed)"}

PYPROJECT = """
[tool.kernelgate]
layer_threshold = "100%"
kernel_threshold = "100%"
total_threshold = "100%"
floor_us = 300.0
kernel_floor_us = 300.0
"""

SUITE = """
def test_yolo(kernelgate):
    kernelgate.yolo(model="yolov8n", precision="fp32", batch=1, imgsz=64)
"""


def gate_job() -> dict[str, object]:
    job = yaml.safe_load(GATE.read_text())["jobs"]["gate"]
    assert isinstance(job, dict)
    return job


def uploaded_paths() -> list[str]:
    """The ``path:`` lines of every upload-artifact step of the gate job."""
    steps = gate_job()["steps"]
    assert isinstance(steps, list)
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    paths = [line.strip() for s in uploads for line in str(s["with"]["path"]).splitlines() if line.strip()]
    assert paths, "gate.yml uploads nothing?"
    return paths


def report_dir() -> str:
    """The --kernelgate-report-dir the gate step passes."""
    steps = gate_job()["steps"]
    assert isinstance(steps, list)
    scripts = " ".join(str(s.get("run", "")) for s in steps)
    (found,) = re.findall(r"--kernelgate-report-dir[= ](\S+)", scripts)
    return found


def uploaded_files(root: Path) -> dict[str, str]:
    """Every file under the upload paths, as text (gzipped traces and xz samples files decompressed)."""
    texts = {}
    for pattern in uploaded_paths():
        found = root / pattern
        files = sorted(found.rglob("*")) if found.is_dir() else sorted(root.glob(pattern))
        for path in files:
            if path.is_file():
                data = path.read_bytes()
                data = gzip.decompress(data) if path.suffix == ".gz" else data
                data = lzma.decompress(data) if path.suffix == ".xz" else data
                texts[str(path.relative_to(root))] = data.decode("utf-8", errors="replace")
    return texts


def names_of(results: dict[str, object]) -> set[str]:
    """Layer, layer type, module and kernel names of an unredacted results file."""
    names: set[str] = set()
    benchmarks = results["benchmarks"]
    assert isinstance(benchmarks, list)
    for bench in benchmarks:
        m = bench["extra_info"]["kernelgate"]
        names |= {lay["name"] for lay in m["layers"]} | {lay["type"] for lay in m["layers"]}
        names |= {k["module"] for k in m["kernels"]} | {k["name"] for k in m["kernels"]}
    return names - KEPT


def hosts() -> set[str]:
    return {socket.gethostname(), platform.node()} - {""}


def leaks(texts: dict[str, str], names: set[str]) -> dict[str, list[str]]:
    """For each file, the names and host names found in it."""
    host = [re.compile(rf"(?<![\w.-]){re.escape(h)}(?![\w.-])") for h in hosts()]
    found = {}
    for path, text in texts.items():
        hits = sorted(n for n in names if n in text) + [p.pattern for p in host if p.search(text)]
        if hits:
            found[path] = hits
    return found


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3",
        f"--kernelgate-report-dir={report_dir()}", *args,
    )  # fmt: skip


@pytest.mark.slow
def test_no_name_and_no_host_name_in_any_uploaded_file(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE)
    run(pytester, "--kernelgate-save").assert_outcomes(passed=1)
    # 10 profiled forwards against the baseline's 5 (test_report_plugin's note: one preempted forward)
    slowed = ("--kernelgate-slow-layer=model.2:8", "--kernelgate-no-confirm", "--kernelgate-iterations=10")

    run(pytester, *slowed).assert_outcomes(failed=1)  # the control: the same grep, no redaction
    plain = uploaded_files(pytester.path)
    (results,) = [path for path in plain if path.endswith("0001_kernelgate.json")]
    names = names_of(baseline.read_document(pytester.path / results))  # kernels: in the samples file
    assert {"model.2", "C2f", "model.2.cv1.conv", "aten::conv2d"} <= names
    traces = [path for path in plain if path.endswith(".pt.trace.json.gz")]
    assert len(traces) == 2, plain.keys()  # the baseline's and this run's excerpt of the regression
    found = leaks(plain, names)
    for path in [*traces, next(p for p in plain if p.endswith("0001_kernelgate.json"))]:
        assert any("model.2" in hit for hit in found[path]), path
        assert any(h in hit for hit in found[path] for h in hosts()), path  # host_name, node

    run(pytester, *slowed, "--kernelgate-redact").assert_outcomes(failed=1)
    redacted = uploaded_files(pytester.path)
    assert redacted.keys() == plain.keys()
    assert leaks(redacted, names) == {}
    trace = json.loads(next(redacted[p] for p in traces if ".current." in p))
    assert "host_name" not in trace and "traceName" not in trace


def test_the_grep_reads_what_gate_yml_uploads() -> None:
    assert uploaded_paths() == [".kernelgate/report/", ".kernelgate/results/"]
    assert shlex.split(report_dir()) == [".kernelgate/report"]
