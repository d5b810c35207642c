"""Write the report folder: report.md, report.html, report.json and the traces of regressed benchmarks.

Used at the end of a pytest session (from the plugin's state) and by ``kernelgate report`` (from
two result files). With ``redact``, layer, type, module and kernel names are hashed in every file
written here (:mod:`kernelgate.report.redact`); the terminal keeps the real names.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgate.baseline import reading as baseline
from kernelgate.baseline.errors import BaselineError
from kernelgate.baseline.names import safe_name
from kernelgate.config import Scope
from kernelgate.measure.results import Measurement
from kernelgate.report import data as report_data
from kernelgate.report import html as report_html
from kernelgate.report import json as report_json
from kernelgate.report import markdown as report_markdown
from kernelgate.report import sections as report_sections
from kernelgate.report import trace_store
from kernelgate.report.escape import text
from kernelgate.report.redact import Redactor, names_of, scrub
from kernelgate.report.sections import RunOutcome
from kernelgate.verdict import diff
from kernelgate.verdict.compare import Comparison

MARKDOWN, HTML, JSON, TRACES = "report.md", "report.html", "report.json", "traces"


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Item:
    """One compared benchmark and what its report needs."""

    comparison: Comparison
    base: Measurement
    current: Measurement
    history: tuple[tuple[str, Measurement], ...] = ()
    base_trace: Path | None = None
    current_trace: Path | None = None


@dataclass(frozen=True)
class Published:
    folder: Path
    failed: bool
    traces: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    headline: str = ""  # report.md's first line as plain text: the verdict

    def lines(self, shown: Callable[[Path], str] | None = None) -> list[str]:
        """What the terminal summary says about the reports (paths below the working directory shortened)."""
        shown = shown or relative
        folder = self.folder
        lines = [
            f"report: {shown(folder / MARKDOWN)} (PR comment), {shown(folder / HTML)} (plots), "
            f"{shown(folder / JSON)} (for tools)"
        ]
        if self.traces:
            names = ", ".join(p.name for p in self.traces)
            lines.append(f"traces of regressed benchmarks in {shown(folder / TRACES)}/: {names}")
        return lines + list(self.notes)


def _trace_pair(item: Item, d: diff.BenchmarkDiff, folder: Path, redactor: Redactor | None) -> diff.TracePair:
    stem = safe_name(d.benchmark)
    written: dict[str, str | None] = {"baseline": None, "current": None}
    notes = []
    sources = {"baseline": (item.base_trace, ()), "current": (item.current_trace, item.current.total.samples)}
    for role, (source, totals) in sources.items():
        if source is None or not source.is_file():
            notes.append(
                "the baseline has no stored trace (re-record it with --kernelgate-save to keep one)"
                if role == "baseline"
                else "no trace of this run was found"
            )
            continue
        try:
            doc = trace_store.load(source)
            doc = doc if role == "baseline" else trace_store.excerpt(doc, totals)
        except (OSError, ValueError) as exc:  # unreadable, not JSON, not a profile: the report goes on
            notes.append(f"the {role} trace {source} was not copied ({exc})")
            continue
        if redactor is not None:
            doc = trace_store.redact(doc, redactor)
        name = f"{stem}.{role}{trace_store.SUFFIX}"
        trace_store.write(trace_store.encode(doc), folder / TRACES / name)
        written[role] = f"{TRACES}/{name}"
    return diff.TracePair(written["baseline"], written["current"], "; ".join(notes))


def build_diffs(items: Sequence[Item], folder: Path, redactor: Redactor | None) -> list[diff.BenchmarkDiff]:
    out = []
    for item in items:
        comparison, base, current = item.comparison, item.base, item.current
        history = item.history
        if redactor is not None:
            comparison = redactor.comparison(comparison, names_of(base, current))
            base, current = redactor.measurement(base), redactor.measurement(current)
            history = tuple((label, redactor.measurement(m)) for label, m in history)
        d = diff.build(comparison, base, current, history)
        if d.failed:
            d = dataclasses.replace(d, traces=_trace_pair(item, d, folder, redactor))
        out.append(d)
    return out


def publish(
    items: Sequence[Item],
    folder: Path,
    redact: bool = False,
    footer: str = "",
    run: RunOutcome | None = None,
) -> Published:
    """Write the report folder. ``run`` is how the whole run ended (its exit decision, the
    benchmarks not compared, the cold starts): with it every file says failed exactly when the
    run's exit status is 1."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in (folder / TRACES).glob(f"*{trace_store.SUFFIX}"):
        stale.unlink()
    redactor = Redactor.from_environment() if redact else None
    diffs = build_diffs(items, folder, redactor)
    if redactor is not None and run is not None:
        hidden = names_of(*(m for item in items for m in (item.base, item.current)))
        judged = tuple(
            dataclasses.replace(j, why=scrub(j.why, hidden), reason=scrub(j.reason, hidden))
            for j in run.judged
        )
        run = dataclasses.replace(
            run, coldstarts=tuple(redactor.comparison(c) for c in run.coldstarts), judged=judged
        )
    failed = run.decision.failed if run is not None else any(d.failed for d in diffs)
    (folder / MARKDOWN).write_text(report_markdown.render(diffs, footer=footer, run=run), encoding="utf-8")
    (folder / HTML).write_text(report_html.render(diffs, run), encoding="utf-8")
    document = report_json.document(diffs)
    document["failed"] = failed
    if run is not None:
        document["not_compared"] = [
            {"benchmark": c.benchmark, "status": c.status.value, "reason": c.reason, "fix": c.fix}
            for c in run.not_compared
        ]
        document["reasons"] = report_sections.unshown(diffs, run)  # the others: the failing benchmarks
        document["judged"] = [dataclasses.asdict(j) for j in run.judged]  # the same-host judge's suspects
    (folder / JSON).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    runner = (run.arch, report_sections.unshown(diffs, run)) if run is not None else ("", ())
    (folder / report_data.FILE).write_text(report_data.render(diffs, failed, runner), encoding="utf-8")
    traces = tuple(sorted((folder / TRACES).glob(f"*{trace_store.SUFFIX}")))
    notes = tuple(f"{d.benchmark}: {d.traces.note}" for d in diffs if d.traces is not None and d.traces.note)
    return Published(folder, failed, traces, notes, text(report_markdown.headline(diffs, run)))


# gate.yml names an older baseline by its commit: ``<commit time, Unix seconds>-<short hash>``
# (``git log --format=%ct-%h``); before that, ``<commit date>-<short hash>`` (``%cs-%h``).
_COMMIT_TIME = re.compile(r"(?P<time>\d{9,11})-(?P<sha>[0-9a-f]{4,40})")
_COMMIT_DATE = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<sha>[0-9a-f]{4,40})")


def history_order(stem: str) -> tuple[float, str, str]:
    """How an older baseline file named ``stem`` sorts (its commit time; names without one last, by
    name) and its label on the plot (``YYYY-MM-DD HH:MM abc1234``)."""
    found = _COMMIT_TIME.fullmatch(stem)
    if found:
        when = datetime.datetime.fromtimestamp(int(found["time"]), datetime.UTC)
        return when.timestamp(), stem, f"{when:%Y-%m-%d %H:%M} {found['sha']}"
    found = _COMMIT_DATE.fullmatch(stem)
    if found:
        try:
            day = datetime.datetime.strptime(found["date"], "%Y-%m-%d").replace(tzinfo=datetime.UTC)
        except ValueError:
            return math.inf, stem, stem
        return day.timestamp(), stem, f"{found['date']} {found['sha']}"
    return math.inf, stem, stem


def load_history(
    folder: Path | None, fullnames: Iterable[str]
) -> tuple[dict[str, list[tuple[str, Measurement]]], list[str]]:
    """Older baseline files in ``folder``, per benchmark, oldest commit first (:func:`history_order`:
    named by commit time and hash as gate.yml names them; other names after them, by name)."""
    history: dict[str, list[tuple[str, Measurement]]] = {name: [] for name in fullnames}
    notes: list[str] = []
    if folder is None:
        return history, notes
    if not folder.is_dir():
        return history, [f"history: {folder} is not a folder; no history plot"]
    for path in sorted(folder.glob("*.json"), key=lambda p: history_order(p.stem)[:2]):
        try:
            entries = baseline.load(path)
        except BaselineError as exc:
            notes.append(f"history: skipped {exc}")
            continue
        label = history_order(path.stem)[2]
        for name, points in history.items():
            if name in entries:
                points.append((label, entries[name].measurement))
    return history, notes


def session_items(
    measured: Sequence[baseline.Entry],
    comparisons: Sequence[Comparison],
    baselines: Mapping[Path, Mapping[str, baseline.Entry]],
    folders: tuple[Path, Path],
    history_dir: Path | None,
) -> tuple[list[Item], list[str]]:
    """The compared benchmarks of a pytest session, with their baseline and current measurements
    (``baselines``: the baseline files the session read; ``folders``: the baseline folder and the
    run's output folder, where the traces are)."""
    baseline_dir, out_dir = folders
    current = {e.measurement.benchmark: e for e in measured}
    history, notes = load_history(history_dir, (e.fullname for e in measured))
    items = []
    for comparison in comparisons:
        if not comparison.of(Scope.TOTAL):  # a cold start: its phases are in the terminal summary
            continue
        entry = current.get(comparison.benchmark)
        path = baseline.path_for(baseline_dir, comparison.arch)
        base = baselines.get(path, {}).get(entry.fullname) if entry is not None else None
        if entry is None or base is None:
            notes.append(
                f"report: {comparison.benchmark} left out, its measurements were not kept "
                "(is pytest-benchmark disabled?)"
            )
            continue
        items.append(
            Item(
                comparison,
                base.measurement,
                entry.measurement,
                tuple(history.get(entry.fullname, ())),
                trace_store.baseline_trace(baseline_dir, comparison.arch, comparison.benchmark),
                trace_store.current_trace(out_dir, entry.fullname),
            )
        )
    return items, notes
