"""report.md and the terminal say how the whole run ended: the headline's mark is the run's
decision, benchmarks not compared have a table (why, command to fix), cold starts have a table of
their phases, and figures that are not settled (ambiguous, inconclusive) show why, not as
"within threshold"."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from real_data import slowed_item

from kernelgate.config import GateConfig, Scope, Threshold, record_command
from kernelgate.plugin import finish
from kernelgate.plugin.session import STATE_KEY, Options, State
from kernelgate.report import publish
from kernelgate.report.sections import RunOutcome
from kernelgate.report.terminal import let_go_lines, unsettled_lines
from kernelgate.verdict import policy, probespeed
from kernelgate.verdict.compare import Comparison, Delta, Verdict
from kernelgate.verdict.delta import Basis

V11 = "benchmarks/test_yolo.py::test_yolo[yolo11n-fp16-bs1-640]"


def phase(name: str, base_ms: float, now_ms: float, verdict: Verdict) -> Delta:
    return Delta(Scope.PHASE, name, "warm", 1e3 * base_ms, 1e3 * now_ms, Threshold(0.25, 250e3), verdict)


COLD = Comparison(
    "yolov8n-fp16-bs1-640-warm",
    "sm90-nvidia-h200",
    (
        phase("total", 4100.0, 6900.0, Verdict.REGRESSED),
        phase("import_torch", 1900.0, 1950.0, Verdict.UNCHANGED),
        phase("first_forward", 900.0, 3600.0, Verdict.REGRESSED),
        dataclasses.replace(
            phase("cuda_init", 150.0, 240.0, Verdict.UNCHANGED),
            note="not from this change: base -> head +1.2 % on this runner",
        ),
        phase("to_steady", 0.0, 0.0, Verdict.UNCHANGED),  # no length on either side: no row
    ),
    frozenset({Verdict.REGRESSED}),
)


def passing_item() -> publish.Item:
    """The real pair, its failures turned into verdicts that pass (one layer ambiguous)."""
    item = slowed_item()
    deltas = []
    for d in item.comparison.deltas:
        if d in item.comparison.failures:
            d = dataclasses.replace(
                d, verdict=Verdict.AMBIGUOUS if d.name == "model.2" else Verdict.UNCHANGED
            )
        deltas.append(d)
    return dataclasses.replace(item, comparison=dataclasses.replace(item.comparison, deltas=tuple(deltas)))


def test_a_benchmark_without_a_baseline_makes_the_headline_fail(tmp_path: Path) -> None:
    missing = policy.Case("yolo11n-fp16-bs1-640", policy.Status.NO_BASELINE, "no baseline in baselines/x",
                          record_command(V11))  # fmt: skip
    item = passing_item()
    decision = policy.decide([policy.Case.of(item.comparison), missing], policy.ExitPolicy())
    published = publish.publish([item], tmp_path, run=RunOutcome(decision, (missing,)))
    assert published.failed
    text = (tmp_path / "report.md").read_text()
    headline = text.splitlines()[1]
    assert headline.startswith("### ❌ kernelgate: no regression in 1 benchmark(s)")
    assert headline.endswith("; 1 not compared: yolo11n-fp16-bs1-640 (no baseline)")
    assert "**The run fails (exit status 1):**" in text
    assert "- yolo11n-fp16-bs1-640: no baseline: no baseline in baselines/x; fix: pytest 'benchmarks/" in text
    assert (
        "| yolo11n-fp16-bs1-640 | no baseline: no baseline in baselines/x | "
        f"`pytest '{V11}' --kernelgate-save` |"
    ) in text


def test_an_ambiguous_layer_is_shown_as_not_settled_with_why(tmp_path: Path) -> None:
    item = passing_item()
    decision = policy.decide([policy.Case.of(item.comparison)], policy.ExitPolicy())
    publish.publish([item], tmp_path, run=RunOutcome(decision))
    text = (tmp_path / "report.md").read_text()
    headline = text.splitlines()[1]
    assert headline.startswith("### ✅ kernelgate: no regression")
    assert headline.endswith("; 1 ambiguous figure(s), not settled (see below)")
    assert "#### Not settled (neither a pass nor a regression)" in text
    assert (
        "| yolov8n-fp16-bs1-640 | `model.2` | +" in text and "| ambiguous | over threshold but inside" in text
    )
    assert "| 23 of 24 (1 not settled) |" in text  # not counted as within threshold
    (line,) = unsettled_lines([item.comparison])
    assert line.startswith("not settled: yolov8n-fp16-bs1-640 model.2 ambiguous (+")
    assert "over threshold but inside the noise" in line


def test_a_latency_passed_at_this_runners_cpu_speed_is_shown_with_both_numbers(tmp_path: Path) -> None:
    """The screen let a latency over its threshold go because each step's CPU-speed loop explains it
    (probespeed.explained): the run passes, and the terminal and report.md say so, both numbers."""
    item = passing_item()
    wall = Delta(Scope.WALL, "wall", "", 11300.0, 14800.0, Threshold(0.1, 50.0), Verdict.REGRESSED)
    found = dataclasses.replace(item.comparison, deltas=(*item.comparison.deltas, wall))
    at = dataclasses.replace(
        found, deltas=(dataclasses.replace(wall, current_us=11500.0, verdict=Verdict.UNCHANGED),)
    )
    shown = probespeed.explained(found, at)
    assert not shown.failed
    (line,) = let_go_lines([shown])
    assert line.startswith(
        "passed at this runner's CPU speed: yolov8n-fp16-bs1-640 wall: +31.0 % here, +1.8 % "
    )
    assert probespeed.EXPLAINED in line
    # only the figures the loop let go: none in a comparison without one, none among the unsettled
    assert let_go_lines([item.comparison]) == []
    assert not any("wall" in u for u in unsettled_lines([shown]))
    decision = policy.decide([policy.Case.of(shown)], policy.ExitPolicy())
    publish.publish([dataclasses.replace(item, comparison=shown)], tmp_path, run=RunOutcome(decision))
    text = (tmp_path / "report.md").read_text()
    assert "#### Passed at this runner's CPU speed (over the threshold as measured)" in text
    assert "| yolov8n-fp16-bs1-640 | `wall` | +31.0 % | +31.0 % here, +1.8 % at each step's CPU speed" in text
    publish.publish(
        [item],
        tmp_path,
        run=RunOutcome(policy.decide([policy.Case.of(item.comparison)], policy.ExitPolicy())),
    )
    assert "Passed at this runner's CPU speed" not in (tmp_path / "report.md").read_text()


def test_a_layer_passed_at_the_level_of_this_runners_own_rounds_is_shown_with_both_numbers(
    tmp_path: Path,
) -> None:
    """The screen let a device layer over its threshold go because it sits at the level of the slowest
    of this runner's own rounds (ownrange.at_own_level): said in the terminal and in report.md."""
    item = passing_item()
    note = ("+3.4 % against the pooled median of this runner's own rounds; 106.5 µs is +0.5 µs from the "
            "slowest of them (106.0 µs), within 0.6 µs: inside the levels of its own rounds")  # fmt: skip
    layer = Delta(Scope.LAYER, "model.10", "Upsample", 103.0, 106.5, Threshold(0.025, 0.5),
                  Verdict.UNCHANGED, note=note, basis=Basis.OWN_LEVEL)  # fmt: skip
    shown = dataclasses.replace(item.comparison, deltas=(*item.comparison.deltas, layer))
    assert not shown.failed
    assert let_go_lines([shown]) == [
        f"passed at the level of this runner's own rounds: yolov8n-fp16-bs1-640 model.10: {note}"
    ]
    decision = policy.decide([policy.Case.of(shown)], policy.ExitPolicy())
    publish.publish([dataclasses.replace(item, comparison=shown)], tmp_path, run=RunOutcome(decision))
    text = (tmp_path / "report.md").read_text()
    title = "Passed at the level of this runner's own rounds (over the threshold against their pooled median)"
    assert f"#### {title}" in text
    assert "Passed at this runner's CPU speed" not in text


class _Reporter:
    """What ``pytest_terminal_summary`` writes to, recorded."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def section(self, title: str) -> None:
        self.out.append(f"== {title}")

    def write(self, text: str) -> None:
        self.out.append(text)

    def write_line(self, line: str) -> None:
        self.out.append(line)


class _Config:
    """The parts of pytest.Config the kernelgate section reads."""

    def __init__(self, state: State) -> None:
        self.stash = pytest.Stash()
        self.stash[STATE_KEY] = state

    def get_terminal_writer(self) -> object:
        return dataclasses.make_dataclass("Writer", [("hasmarkup", bool), ("fullwidth", int)])(False, 120)

    def get_verbosity(self) -> int:
        return 0


def test_the_runs_kernelgate_section_prints_the_figures_passed_at_cpu_speed() -> None:
    """plugin/finish.summary, the terminal section of a run, with a latency the loop let go."""
    item = passing_item()
    wall = Delta(Scope.WALL, "wall", "", 11300.0, 14800.0, Threshold(0.1, 50.0), Verdict.REGRESSED)
    found = dataclasses.replace(item.comparison, deltas=(*item.comparison.deltas, wall))
    at = dataclasses.replace(
        found, deltas=(dataclasses.replace(wall, current_us=11500.0, verdict=Verdict.UNCHANGED),)
    )
    state = State(GateConfig(), Options())
    state.add_comparison(probespeed.explained(found, at))
    state.note("kernelgate: screened against this runner's own rounds")  # a run that has something to say
    reporter = _Reporter()
    finish.summary(reporter, _Config(state))  # type: ignore[arg-type]
    lines = "\n".join(reporter.out).splitlines()
    said = [line for line in lines if line.startswith("passed at this runner's CPU speed: ")]
    assert said == [
        "passed at this runner's CPU speed: yolov8n-fp16-bs1-640 wall: +31.0 % here, +1.8 % "
        f"{probespeed.EXPLAINED}: the CPU's speed, not the change"
    ], lines
    assert any(line.startswith("not settled: yolov8n-fp16-bs1-640 model.2 ambiguous") for line in lines), (
        lines
    )


def test_cold_starts_have_a_table_of_their_phases(tmp_path: Path) -> None:
    decision = policy.decide([policy.Case.of(COLD)], policy.ExitPolicy())
    assert decision.failed
    publish.publish([], tmp_path, run=RunOutcome(decision, (), (COLD,)))
    text = (tmp_path / "report.md").read_text()
    assert text.splitlines()[1].startswith("### ❌ kernelgate: no benchmark compared")
    assert "#### Cold starts" in text
    assert (
        "| yolov8n-fp16-bs1-640-warm | first\\_forward | 900.0 ms | 3.600 s | +300.0 % | 25 % / 250 ms "
        "| **regressed** |" in text
    )
    assert (
        "| yolov8n-fp16-bs1-640-warm | import\\_torch | 1.900 s | 1.950 s | +2.6 % | 25 % / 250 ms "
        "| unchanged |" in text
    )
    # the same-host judge's reason beside a phase far off another host's baseline; no empty phase
    judged = "unchanged (not from this change: base -\\> head +1.2 % on this runner)"
    assert f"| 150.0 ms | 240.0 ms | +60.0 % | 25 % / 250 ms | {judged} |" in text
    assert "to\\_steady" not in text


def test_the_headline_counts_the_cold_starts_it_judged_beside_the_benchmarks(tmp_path: Path) -> None:
    # "no regression in N benchmark(s)" counts the kernel benchmarks; passed cold starts are said too
    passed = dataclasses.replace(
        COLD,
        deltas=tuple(dataclasses.replace(d, verdict=Verdict.UNCHANGED) for d in COLD.deltas),
        fail_on=frozenset({Verdict.REGRESSED}),
    )
    item = passing_item()
    cases = [policy.Case.of(item.comparison), policy.Case.of(passed)]
    decision = policy.decide(cases, policy.ExitPolicy())
    publish.publish([item], tmp_path, run=RunOutcome(decision, (), (passed, passed)))
    line = (tmp_path / "report.md").read_text().splitlines()[1]
    assert "no regression in 1 benchmark(s)" in line and line.endswith("; 2 cold start(s) passed"), line
    publish.publish([item], tmp_path, run=RunOutcome(decision, (), ()))
    assert "cold start" not in (tmp_path / "report.md").read_text().splitlines()[1]


def test_a_cold_start_not_measured_as_the_repeat_of_another_is_said_in_the_report(tmp_path: Path) -> None:
    passed = dataclasses.replace(
        COLD,
        deltas=tuple(dataclasses.replace(d, verdict=Verdict.UNCHANGED) for d in COLD.deltas),
        fail_on=frozenset({Verdict.REGRESSED}),
    )
    decision = policy.decide([policy.Case.of(passed)], policy.ExitPolicy())
    why = "not measured: a warm cache holds nothing to reuse on this runner, so its processes would repeat"
    run = RunOutcome(decision, (), (passed,), unmeasured=(("coldstart-x-warm", why),))
    publish.publish([], tmp_path, run=run)
    lines = (tmp_path / "report.md").read_text().splitlines()
    assert lines[1].endswith("; 1 cold start(s) passed; 1 not measured, as the repeat of another (see below)")
    table = lines.index("#### Cold starts")
    assert lines.index(f"- `coldstart-x-warm`: {why}") > table  # below the judged cold starts' phases
    publish.publish([], tmp_path, run=RunOutcome(decision, (), (passed,)))
    assert "not measured" not in (tmp_path / "report.md").read_text()


def test_report_of_a_run_with_every_outcome_golden(tmp_path: Path) -> None:
    """A passing benchmark with an ambiguous layer, one without a baseline, one that crashed, and
    a regressed cold start: the headline, why the run fails, and the three tables."""
    from real_data import GOLDEN, check_golden

    item = passing_item()
    missing = policy.Case("yolo11n-fp16-bs1-640", policy.Status.NO_BASELINE, "no baseline in baselines/x",
                          record_command(V11))  # fmt: skip
    node = "benchmarks/test_yolo.py::TestGraph::test_yolo[yolov8n-graph]"
    crashed = policy.Case(
        node, policy.Status.NOT_COMPARED, "RuntimeError: CUDA error: out of memory", f"pytest '{node}'"
    )
    cases = [policy.Case.of(item.comparison), missing, crashed, policy.Case.of(COLD)]
    run = RunOutcome(policy.decide(cases, policy.ExitPolicy()), (missing, crashed), (COLD,))
    publish.publish([item], tmp_path, run=run)
    text = (tmp_path / "report.md").read_text()
    check_golden(GOLDEN / "report_outcome.md", text.split("<details>")[0])


def test_a_runner_that_failed_on_a_benchmark_not_compared_fails_the_merged_report(tmp_path: Path) -> None:
    """The merged PR comment agrees with each runner's exit: a runner whose compared benchmarks
    passed but which had a configuration without a baseline, and one that compared nothing."""
    from kernelgate.report import merge

    missing = policy.Case("yolo11n-fp16-bs1-640", policy.Status.NO_BASELINE, "no baseline in baselines/x",
                          record_command(V11))  # fmt: skip
    item = passing_item()
    decision = policy.decide([policy.Case.of(item.comparison), missing], policy.ExitPolicy())
    publish.publish([item], tmp_path / "h200", run=RunOutcome(decision, (missing,), (), item.comparison.arch))
    empty = policy.decide(
        [missing], policy.ExitPolicy(), "kernelgate: nothing was compared: 1 gate benchmark"
    )
    publish.publish([], tmp_path / "a100", run=RunOutcome(empty, (missing,), (), "sm80-nvidia-a100"))

    merged = merge.merge([tmp_path / "h200", tmp_path / "a100"], tmp_path / "merged")
    assert merged.failed
    text = (tmp_path / "merged" / "report.md").read_text()
    headline = text.splitlines()[1]
    assert headline.startswith("### ❌ kernelgate: failed on 2 of 2 architecture(s): ")
    assert "sm90-nvidia-h200 (0 of 1 benchmarks; 1 more reason(s) its run failed)" in headline
    assert "sm80-nvidia-a100 (0 of 0 benchmarks; 2 more reason(s) its run failed)" in headline
    assert "- yolo11n-fp16-bs1-640: no baseline: no baseline in baselines/x; fix: " in text
    assert "- kernelgate: nothing was compared: 1 gate benchmark" in text


def test_the_reasons_a_run_fails_keep_no_layer_name_in_a_redacted_report(tmp_path: Path) -> None:
    item = slowed_item()
    decision = policy.decide([policy.Case.of(item.comparison)], policy.ExitPolicy())
    assert "model.2" in decision.reasons[0]  # the terminal keeps the real names
    publish.publish([item], tmp_path, redact=True, run=RunOutcome(decision, (), (), item.comparison.arch))
    for name in ("report.md", "report.json", "report-data.json", "report.html"):
        assert "model.2" not in (tmp_path / name).read_text(), name


def test_what_the_same_host_judge_decided_is_listed_with_why_each_was_a_suspect(tmp_path: Path) -> None:
    from kernelgate.report.sections import Judged

    item = passing_item()
    decision = policy.decide([policy.Case.of(item.comparison)], policy.ExitPolicy())
    judged = (
        Judged("yolov8n-fp32-bs1-640", "wall +31.8 % over 50% of their thresholds", "pass",
               "base and head agree on this runner; wall: the processes of both sides ran at different "
               "speeds (base 4422 … 7912, head 4403 … 6912 µs)", 4),
        Judged("coldstart-yolov8n-fp16-bs1-640-empty", "another host's baseline", "pass",
               "base and head agree on this runner", 2),
        Judged("yolo11n-fp16-bs1-640", "", "inconclusive", "no git repository at /x", 0),
    )  # fmt: skip
    publish.publish([item], tmp_path, run=RunOutcome(decision, judged=judged))
    text = (tmp_path / "report.md").read_text()
    assert (
        "<summary>Decided on this runner (base and head measured here): 3 suspect(s) of the "
        "stored-baseline screen, 2 pass, 1 inconclusive</summary>"
    ) in text
    assert (
        "| yolov8n-fp32-bs1-640 | wall +31.8 % over 50% of their thresholds | pass | 4 | base and head "
        "agree on this runner; wall: the processes of both sides ran at different speeds (base 4422 … 7912, "
        "head 4403 … 6912 µs) |"
    ) in text
    assert "| yolo11n-fp16-bs1-640 | over its screen threshold | inconclusive | — | no git repository" in text
    # before the hosts line, after the passing table
    assert text.index("Decided on this runner") > text.index("benchmark(s) passed")
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["judged"][0] == {
        "benchmark": "yolov8n-fp32-bs1-640",
        "why": "wall +31.8 % over 50% of their thresholds",
        "outcome": "pass",
        "reason": judged[0].reason,
        "processes": 4,
    }
    publish.publish([item], tmp_path, run=RunOutcome(decision))
    assert "Decided on this runner" not in (tmp_path / "report.md").read_text()


def test_a_redacted_report_hides_the_layers_the_judges_reasons_name(tmp_path: Path) -> None:
    from kernelgate.report.redact import REDACTED_NOTE
    from kernelgate.report.sections import Judged

    item = passing_item()
    decision = policy.decide([policy.Case.of(item.comparison)], policy.ExitPolicy())
    judged = (
        Judged("yolov8n-fp16-bs1-640", "host model.9 +60.2 %, wall +8.0 % over 50% of their thresholds",
               "pass", "base and head agree on this runner; host model.9: the processes of both sides", 3),
        Judged("coldstart-x", "another host's baseline", "pass", "base and head agree on this runner", 2),
    )  # fmt: skip
    publish.publish([item], tmp_path, redact=True, run=RunOutcome(decision, judged=judged))
    text = (tmp_path / "report.md").read_text()
    assert "model.9" not in text
    assert f"| yolov8n-fp16-bs1-640 | {REDACTED_NOTE} | pass | 3 | {REDACTED_NOTE} |" in text
    assert "| coldstart-x | another host's baseline | pass | 2 | base and head agree on this runner |" in text


def test_the_html_page_says_how_the_run_ended_and_what_the_judge_decided(tmp_path: Path) -> None:
    from kernelgate.report.sections import Judged

    missing = policy.Case("yolo11n-fp16-bs1-640", policy.Status.NO_BASELINE, "no baseline in baselines/x",
                          record_command(V11))  # fmt: skip
    item = passing_item()
    decision = policy.decide([policy.Case.of(item.comparison), missing], policy.ExitPolicy())
    judged = (
        Judged("yolov8n-fp32-bs1-640", "wall +31.8 % over 50% of their thresholds", "pass",
               "base and head agree on this runner", 4),
        Judged("yolo11n-fp16-bs1-640", "", "inconclusive", "no git repository at /x", 0),
    )  # fmt: skip
    publish.publish([item], tmp_path, run=RunOutcome(decision, (missing,), judged=judged))
    page = (tmp_path / "report.html").read_text()
    # the badge is the run's decision (exit 1: a benchmark not compared), not only the diffs'
    assert '<h1><span class="badge fail">FAIL</span> kernelgate: no regression in 1 benchmark(s)' in page
    assert "; 1 not compared: yolo11n-fp16-bs1-640 (no baseline)</h1>" in page
    assert "<strong>The run fails (exit status 1):</strong>" in page
    assert "<li>yolo11n-fp16-bs1-640: no baseline" in page
    assert (
        "<summary>Decided on this runner (base and head measured here): 2 suspect(s) of the "
        "stored-baseline screen, 1 pass, 1 inconclusive</summary>"
    ) in page
    assert "<td>inconclusive</td><td>—</td><td>no git repository at /x</td>" in page
    assert "over its screen threshold" in page
    # without the run: the diffs decide, nothing of the judge
    publish.publish([item], tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert '<span class="badge pass">PASS</span>' in page and "Decided on this runner" not in page
