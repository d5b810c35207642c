"""Per-session state of the plugin, kept in ``config.stash``. Light: no torch, no pandas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kernelgate.config import GateConfig

if TYPE_CHECKING:
    from kernelgate.baseline.store import Entry
    from kernelgate.machine.pinning import Slots
    from kernelgate.models.yolo import YoloSpec
    from kernelgate.offline import Judged
    from kernelgate.plugin.outcome import Held, TestVerdict
    from kernelgate.plugin.samehost import Judge, Suspect
    from kernelgate.report.publish import Published
    from kernelgate.verdict.compare import Comparison
    from kernelgate.verdict.policy import ExitDecision
    from kernelgate.verdict.samehost import Decision


class MissingBaselineWarning(UserWarning):
    pass


class NotComparedWarning(UserWarning):
    """A benchmark or the whole run ended without a comparison, and the policy says warn."""


@dataclass(frozen=True)
class Options:
    """What the command line asked of this run (see ``pytest --help``, group kernelgate)."""

    save: bool = False
    device: str = "auto"
    slow_layer: str | None = None
    slow_extra_runs: int = 1
    iterations: int | None = None
    out_dir: Path = Path(".kernelgate")
    append: bool = False
    replace_unreadable: bool = False  # --kernelgate-replace-unreadable
    keep_round: str | None = None  # --kernelgate-keep-round REASON
    confirm_out: Path | None = None
    threads_env: str | None = None  # OMP_NUM_THREADS when the run was configured (machine.threads)
    trust_pt: bool = False
    allow_other_gpu: bool = False
    matrix: str | None = None  # --kernelgate-matrix
    only: tuple[str, ...] = ()  # --kernelgate-only


@dataclass
class State:
    """Per-session state, kept in ``config.stash``: what was measured and compared."""

    config: GateConfig
    options: Options
    arch: str = ""  # the architecture key of this machine (NVML; no torch)
    cases: tuple[YoloSpec, ...] = ()  # the matrix's configurations selected for this run
    measured: list[Entry] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    baselines: dict[Path, dict[str, Entry]] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # session-level failures: the run's exit status is 1
    # node ids of the collected tests that use the kernelgate fixture, and those that were skipped
    gate_tests: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unreliable: list[str] = field(default_factory=list)
    # (benchmark, why) of gate benchmarks skipped as the repeat of one measured in this run (a
    # warm-cache cold start whose empty twin compiled nothing: plugin/coldstart.repeats_twin)
    unmeasured: list[tuple[str, str]] = field(default_factory=list)
    # pytest-xdist's controller: per worker, the tests it ran and their seconds (setup, call, teardown)
    busy: dict[str, tuple[int, float]] = field(default_factory=dict)
    # benchmarks the stored-baseline screen failed, for the same-host judge at session end, and its
    # decisions (kernelgate.plugin.samehost)
    suspects: list[Suspect] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    # the same-host judge, once a suspect needed it (a cold start judged at its test's own time
    # makes it before the session's end), and the decisions made at a test's own time, by node id
    judge: Judge | None = None
    early: dict[str, Decision] = field(default_factory=dict)
    # set by the first benchmark whose CUDA error left the process's CUDA context unusable
    cuda_broken: str | None = None
    # (node id, why) of gate benchmarks that raised before they had an outcome
    failed: list[tuple[str, str]] = field(default_factory=list)
    # the same-host judge's decisions, for the results file (kernelgate.offline), and the messages
    # of those that fail (printed; the run fails on the merged comparisons themselves)
    judged: list[Judged] = field(default_factory=list)
    judge_failures: list[str] = field(default_factory=list)
    # how the run ends (kernelgate.verdict.policy), set at the end of the session
    decision: ExitDecision | None = None
    # the suspects' tests, their reports held until the judge has decided (kernelgate.plugin.outcome),
    # and the judge's verdict of each, by node id
    held: list[Held] = field(default_factory=list)
    verdicts: dict[str, TestVerdict] = field(default_factory=dict)
    tests_done: bool = False  # the last test ran and the judge decided (kernelgate.plugin.finish)

    # The writes. Every change of the session state goes through one of these methods, so that what
    # a run holds can be read from this class alone (tests/test_plugin.py checks that no other
    # module assigns to or appends to a field).

    def add_measured(self, entry: Entry) -> None:
        self.measured.append(entry)

    def add_comparison(self, comparison: Comparison) -> None:
        self.comparisons.append(comparison)

    def add_suspect(self, suspect: Suspect) -> None:
        self.suspects.append(suspect)

    def set_judge(self, judge: Judge | None) -> None:
        self.judge = judge

    def add_early(self, suspect: Suspect, decision: Decision) -> None:
        """A suspect the judge decided at its test's own time (its reports are held all the same)."""
        self.suspects.append(suspect)
        self.early[suspect.nodeid] = decision

    def add_missing(self, benchmark: str) -> None:
        self.missing.append(benchmark)

    def add_unreliable(self, benchmark: str) -> None:
        self.unreliable.append(benchmark)

    def add_unmeasured(self, benchmark: str, why: str) -> None:
        self.unmeasured.append((benchmark, why))

    def add_failed(self, failure: tuple[str, str]) -> None:
        """(node id, why) of a gate benchmark that raised before it had an outcome."""
        self.failed.append(failure)

    def add_skipped(self, nodeid: str) -> None:
        self.skipped.append(nodeid)

    def note(self, *texts: str) -> None:
        """Lines for the run's summary, each said once."""
        self.notes.extend(t for t in dict.fromkeys(texts) if t not in self.notes)

    def add_error(self, text: str) -> None:
        """A session-level failure (the run exits 1); said once, however often it happens."""
        if text not in self.errors:
            self.errors.append(text)

    def add_written(self, path: Path) -> None:
        self.written.append(path)

    def add_decision(self, decision: Decision, merged: Comparison, judged: Judged) -> None:
        """The same-host judge's decision of a suspect, its merged comparison and what the results
        file keeps of it."""
        self.decisions.append(decision)
        self.comparisons.append(merged)
        self.judged.append(judged)

    def add_judge_failure(self, text: str) -> None:
        self.judge_failures.append(text)

    def hold(self, held: Held) -> None:
        """A suspect's test, its reports held until the judge has decided."""
        self.held.append(held)

    def take_held(self) -> list[Held]:
        """The held tests, in the order pytest collected them; none are held after."""
        order = {nodeid: i for i, nodeid in enumerate(self.gate_tests)}
        taken = sorted(self.held, key=lambda h: order.get(h.nodeid, len(order)))
        self.held = []
        return taken

    def mark_tests_done(self) -> None:
        self.tests_done = True

    def add_verdict(self, verdict: TestVerdict) -> None:
        self.verdicts[verdict.nodeid] = verdict

    def set_cuda_broken(self, why: str | None) -> None:
        """The first benchmark whose CUDA error left the context unusable says why; later ones keep it."""
        self.cuda_broken = self.cuda_broken or why

    def set_gate_tests(self, nodeids: list[str]) -> None:
        self.gate_tests = nodeids

    def add_busy(self, worker: str, tests: int, seconds: float) -> None:
        """pytest-xdist's controller: one more report of ``worker``'s."""
        done, spent = self.busy.get(worker, (0, 0.0))
        self.busy[worker] = (done + tests, spent + seconds)

    def set_decision(self, decision: ExitDecision) -> None:
        self.decision = decision

    def absorb(
        self,
        gate_tests: list[str],
        measured: list[Entry],
        comparisons: list[Comparison],
        baselines: dict[Path, dict[str, Entry]],
        lists: dict[str, list[str]],
        suspects: list[Suspect],
        held: list[Held] | None = None,
    ) -> None:
        """pytest-xdist's controller: what one worker measured and decided joins the session's."""
        self.gate_tests += [t for t in gate_tests if t not in self.gate_tests]
        self.measured += measured
        self.comparisons += comparisons
        for path, entries in baselines.items():
            self.baselines.setdefault(path, {}).update(entries)
        for name, items in lists.items():
            if name == "notes":  # a note each worker makes (a baseline's) is said once
                self.note(*items)
            else:
                getattr(self, name).extend(items)
        self.suspects += suspects
        self.held += held or []

    def order_as_collected(self) -> None:
        """Put the lists in the order pytest collected the tests (ties keep the order of arrival)."""
        order = {nodeid: i for i, nodeid in enumerate(self.gate_tests)}
        last = len(order)
        node_of = {e.measurement.benchmark: e.fullname for e in self.measured}

        def rank(name: str) -> int:
            return order.get(node_of.get(name, ""), last)

        self.measured.sort(key=lambda e: order.get(e.fullname, last))
        self.comparisons.sort(key=lambda c: rank(c.benchmark))
        self.missing.sort(key=rank)
        self.unreliable.sort(key=rank)
        self.skipped.sort(key=lambda nodeid: order.get(nodeid, last))

    def outcomes(self) -> int:
        """How many outcomes the session holds: a benchmark that adds none failed before comparing."""
        return len(self.comparisons) + len(self.suspects) + len(self.missing) + len(self.unreliable)

    def nothing_compared(self) -> str | None:
        """Why the run ends without a single comparison (or, with --kernelgate-save, a single saved
        benchmark) although it collected gate benchmarks; None when something was compared."""
        if not self.gate_tests or self.options.confirm_out is not None:
            return None  # a confirm run only measures; its parent compares
        saved = self.options.save and any(e.measurement.reliable for e in self.measured)
        if self.comparisons or self.suspects or saved:
            return None
        n = len(self.gate_tests)
        causes = {
            "skipped": len(set(self.skipped)),
            "without a baseline": len(self.missing),
            "unreliable": len(self.unreliable),
        }
        causes["failed before comparing"] = max(0, n - sum(causes.values()))
        listed = ", ".join(f"{count} {what}" for what, count in causes.items() if count)
        verb = "saved" if self.options.save else "compared"
        return (
            f"kernelgate: nothing was {verb}: {n} gate benchmark(s) collected, none {verb} ({listed}). "
            f"A gate that {verb} nothing checked nothing. Fix the causes above; to let such a run pass, set "
            'on_nothing_compared = "warn" in [tool.kernelgate] (or --kernelgate-on-nothing-compared=warn).'
        )

    def baseline_entries(self, path: Path, arch: str | None = None) -> dict[str, Entry]:
        """The entries of baseline file ``path`` (of architecture ``arch``), read once per session."""
        if path not in self.baselines:
            from kernelgate.baseline.store import load

            exists = path.exists() or path.is_symlink() or path.parent.is_symlink()
            self.baselines[path] = load(path, arch, root=self.config.baseline_dir) if exists else {}
        return self.baselines[path]


STATE_KEY = pytest.StashKey["State"]()


REPORT_KEY: pytest.StashKey[Published] = pytest.StashKey()


# pytest-xdist, controller side: which worker holds which GPU, and the workers whose share arrived
SLOTS_KEY: pytest.StashKey[Slots] = pytest.StashKey()


RECEIVED_KEY = pytest.StashKey[set[str]]()
