"""``kernelgate report merge``: one report of several runners, a section per architecture.

Fed by the checked-in H200 data (real_data.py): the real regression (model.2 slowed) as the report
of an H200 runner, and a SYNTHETIC second architecture, ``sm89-synthetic-from-h200``: the same H200
baseline relabelled with another architecture key and compared with itself (so it passes). No runner
of that architecture measured anything; it stands in for a second runner of the fleet.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from real_data import BASE, DATA, GOLDEN, check_golden, entry, grouped, slowed_item

from kernelgate.cli import main
from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement
from kernelgate.report import data as report_data
from kernelgate.report import merge as report_merge
from kernelgate.report import publish
from kernelgate.verdict.compare import compare, confirmed

SYNTHETIC = "sm89-synthetic-from-h200"
TRACE = DATA / "yolov8n-fp16-h200-2steps.trace.json.gz"


def synthetic(m: Measurement) -> Measurement:
    """H200 data relabelled as another architecture (clearly not a measurement of one)."""
    return dataclasses.replace(
        m, arch=SYNTHETIC, environment={**m.environment, "gpu": "SYNTHETIC (H200 data)"}
    )


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folders two runners wrote, under ``reports/``: the H200 (regression, with traces),
    the synthetic one (pass). Written once for the module; each test gets its own copy (``runners``)."""
    reports = tmp_path_factory.mktemp("published") / "reports"
    item = slowed_item()
    h200 = reports / "kernelgate-sm90-nvidia-h200" / "report"
    published = publish.publish([dataclasses.replace(item, base_trace=TRACE, current_trace=TRACE)], h200)
    assert published.failed and len(published.traces) == 2
    base = synthetic(grouped(entry(BASE).measurement))
    other = reports / f"kernelgate-{SYNTHETIC}" / "report"
    publish.publish([publish.Item(compare(base, base, GateConfig()), base, base)], other)
    return reports


@pytest.fixture
def runners(published: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The report folders two runners wrote (a copy of ``published`` in this test's folder)."""
    reports = shutil.copytree(published, tmp_path / "reports")
    return reports / "kernelgate-sm90-nvidia-h200" / "report", reports / f"kernelgate-{SYNTHETIC}" / "report"


def test_merged_markdown_golden(runners: tuple[Path, Path], tmp_path: Path) -> None:
    merged = report_merge.merge(list(runners), tmp_path / "merged")
    assert merged.failed
    text = (tmp_path / "merged" / "report.md").read_text()
    check_golden(GOLDEN / "merged.md", text)
    lines = text.splitlines()
    assert lines[1] == (
        "### ❌ kernelgate: regression on 1 of 2 architecture(s): sm90-nvidia-h200 (1 of 1 benchmarks)"
    )
    assert lines[3:7] == [
        "| architecture | verdict | benchmarks | failed | passed |",
        "|---|:-:|--:|--:|--:|",
        f"| {SYNTHETIC} | ✅ | 1 | 0 | 1 |",
        "| sm90-nvidia-h200 | ❌ | 1 | 1 | 0 |",
    ]
    sections = [line for line in lines if line.startswith("## ")]
    assert sections == [f"## ✅ {SYNTHETIC}", "## ❌ sm90-nvidia-h200"]


def test_order_of_the_inputs_does_not_matter(runners: tuple[Path, Path], tmp_path: Path) -> None:
    report_merge.merge(list(runners), tmp_path / "a")
    report_merge.merge([runners[1] / report_data.FILE, runners[0]], tmp_path / "b")
    assert (tmp_path / "a" / "report.md").read_text() == (tmp_path / "b" / "report.md").read_text()


def test_the_verdicts_are_the_runners_not_recomputed(tmp_path: Path) -> None:
    """A runner whose confirm run did not repeat the regression passed: so does the merged report,
    although comparing its two measurements again would fail."""
    item = slowed_item()
    flake = confirmed(item.comparison, compare(item.base, item.base, GateConfig()))
    assert compare(item.base, item.current, GateConfig()).failed and not flake.failed
    publish.publish([dataclasses.replace(item, comparison=flake)], tmp_path / "h200")
    merged = report_merge.merge([tmp_path / "h200"], tmp_path / "merged")
    assert not merged.failed
    text = (tmp_path / "merged" / "report.md").read_text()
    assert text.splitlines()[1] == "### ✅ kernelgate: no regression on 1 architecture(s), 1 benchmark(s)"
    (diff,) = report_data.load(tmp_path / "merged" / ".." / "h200")
    assert diff.comparison == flake


def test_traces_are_copied_per_architecture_and_linked(runners: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "merged"
    report_merge.merge(list(runners), out)
    copied = sorted(p.relative_to(out).as_posix() for p in (out / "traces").rglob("*.gz"))
    assert copied == [
        "traces/sm90-nvidia-h200/yolov8n-fp16-bs1-640.baseline.pt.trace.json.gz",
        "traces/sm90-nvidia-h200/yolov8n-fp16-bs1-640.current.pt.trace.json.gz",
    ]
    assert all(f"`{path}`" in (out / "report.md").read_text() for path in copied)
    page = (out / "report.html").read_text()
    assert f'href="{copied[1]}"' in page or copied[1] in page
    assert "<script" not in page and page.count('<section id="arch-') == 2


def test_an_expected_runner_without_a_report_fails(runners: tuple[Path, Path], tmp_path: Path) -> None:
    merged = report_merge.merge([runners[1]], tmp_path / "m", expect=["sm90-nvidia-h200", SYNTHETIC])
    assert merged.failed
    text = (tmp_path / "m" / "report.md").read_text()
    assert "regression on 1 of 2 architecture(s): sm90-nvidia-h200 (no report)" in text
    assert "| sm90-nvidia-h200 | ❌ no report | 0 | 0 | 0 |" in text
    assert "No report from this architecture's runner" in text


def test_cli(runners: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "merged"
    code = main(["report", "merge", *map(str, runners), "--out", str(out), "--footer", "Artifacts: [run](x)"])
    assert code == 1
    printed = capsys.readouterr().out
    assert f"report: {out}/report.md (PR comment), {out}/report.html (plots)" in printed
    assert (out / "report.md").read_text().rstrip().endswith("Artifacts: [run](x)")
    assert main(["report", "merge", str(runners[1]), "--out", str(tmp_path / "pass")]) == 0


def test_cli_refuses_what_it_cannot_merge(
    runners: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path / "m")]
    assert main(["report", "merge", str(runners[0]), str(runners[0] / report_data.FILE), *out]) == 2
    assert "yolov8n-fp16-bs1-640 on sm90-nvidia-h200 is in two reports" in capsys.readouterr().err
    assert main(["report", "merge", str(tmp_path / "nothing-here"), *out]) == 2
    assert "nothing-here: cannot be read (No such file or directory)" in capsys.readouterr().err
    assert not (tmp_path / "m").exists(), "nothing is written before the inputs are read"
    data = runners[1] / report_data.FILE
    data.write_text(json.dumps({"kernelgate_report_data": {"schema_version": 2}, "benchmarks": []}))
    assert main(["report", "merge", str(data), "--out", str(tmp_path / "m")]) == 2
    assert "report data of schema 2, this kernelgate reads 1" in capsys.readouterr().err
    assert main(["report", "merge", str(runners[0]), "--out", str(runners[0])]) == 2
    assert "is one of the reports to merge" in capsys.readouterr().err


def test_report_data_round_trip_renders_the_same_report(runners: tuple[Path, Path]) -> None:
    """What the merge reads back renders the Markdown the runner wrote (the report of one runner)."""
    from kernelgate.report import markdown as report_markdown

    h200, _ = runners
    again = report_markdown.render(report_data.load(h200))
    assert again == (h200 / "report.md").read_text()


def test_merging_needs_no_torch(runners: tuple[Path, Path], tmp_path: Path) -> None:
    """The merge job of the gate workflow installs kernelgate without torch, pandas or scipy."""
    script = (
        "import sys\nfrom kernelgate.cli import main\n"
        f"main(['report', 'merge', *{[str(r) for r in runners]!r}, '--out', {str(tmp_path / 'm')!r}])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'pandas', 'scipy', 'pynvml'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"
    assert (tmp_path / "m" / "report.html").is_file()
