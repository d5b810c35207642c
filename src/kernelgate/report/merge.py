"""One report of several runners: ``kernelgate report merge REPORT... --out DIR``.

Each runner's report folder holds ``report-data.json`` (:mod:`kernelgate.report.data`): the
comparisons with the verdicts that runner decided, and the measurements they came from. The merge
groups the benchmarks by architecture and writes one report.md (the PR comment: an overall verdict,
a table of the architectures, then a section per architecture) and one report.html, and copies the
traces of regressed benchmarks to ``traces/<architecture>/``. Nothing is compared again.

Order is stable whatever the order of the inputs: architectures by name, benchmarks by name. An
architecture given with ``--expect`` that sent no report (its gate failed before comparing) shows
as failed, so a broken runner cannot disappear from the comment.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgate.baseline.names import safe_name
from kernelgate.report import data as report_data
from kernelgate.report import html as report_html
from kernelgate.report import markdown as report_markdown
from kernelgate.report.escape import plain
from kernelgate.report.publish import HTML, MARKDOWN, TRACES
from kernelgate.verdict import diff


class MergeError(Exception):
    """The inputs cannot be merged; the message names the files and the fix."""


@dataclass(frozen=True)
class Arch:
    """The benchmarks of one architecture, from one or more report folders."""

    arch: str
    diffs: tuple[diff.BenchmarkDiff, ...]
    reasons: tuple[str, ...] = ()  # why its runner's run failed beyond the diffs (not compared, ...)

    @property
    def missing(self) -> bool:
        """Expected (``--expect``) but no runner sent a report of it."""
        return not self.diffs and not self.reasons

    @property
    def failed(self) -> bool:
        return self.missing or bool(self.reasons) or any(d.failed for d in self.diffs)

    @property
    def failing(self) -> tuple[diff.BenchmarkDiff, ...]:
        return tuple(d for d in self.diffs if d.failed)


@dataclass(frozen=True)
class Merged:
    folder: Path
    failed: bool
    archs: tuple[Arch, ...]

    def lines(self) -> list[str]:
        return [
            f"kernelgate: {verdict_line(self.archs)}",
            f"report: {self.folder / MARKDOWN} (PR comment), {self.folder / HTML} (plots)",
        ]


def _copy_traces(d: diff.BenchmarkDiff, source: Path, out: Path) -> diff.BenchmarkDiff:
    """The traces of a regressed benchmark, copied to ``traces/<arch>/``; the links follow."""
    if d.traces is None:
        return d
    moved: dict[str, str | None] = {}
    notes = [d.traces.note] if d.traces.note else []
    for role in ("baseline", "current"):
        relative = getattr(d.traces, role)
        moved[role] = None
        if relative is None:
            continue
        found = source / relative
        if not found.is_file():
            notes.append(f"the {role} trace {relative} was not in {source}")
            continue
        target = Path(TRACES) / safe_name(d.arch) / found.name
        (out / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, out / target)
        moved[role] = target.as_posix()
    return dataclasses.replace(
        d, traces=diff.TracePair(moved["baseline"], moved["current"], "; ".join(notes))
    )


def load(
    paths: Sequence[Path], expect: Sequence[str] = ()
) -> dict[str, dict[str, tuple[diff.BenchmarkDiff, Path]]]:
    """The benchmarks of every report folder (or report-data.json) in ``paths``, with the folder each
    came from, by architecture and benchmark."""
    by_arch: dict[str, dict[str, tuple[diff.BenchmarkDiff, Path]]] = {arch: {} for arch in expect}
    for path in paths:
        source = path if path.is_dir() else path.parent
        try:
            diffs = report_data.load(path)
        except report_data.ReportDataError as exc:
            raise MergeError(str(exc)) from exc
        for d in diffs:
            seen = by_arch.setdefault(d.arch, {})
            if d.benchmark in seen:
                raise MergeError(
                    f"{d.benchmark} on {d.arch} is in two reports ({seen[d.benchmark][1]} and {source}): "
                    "merge the reports of one run, one folder per runner"
                )
            seen[d.benchmark] = (d, source)
    return by_arch


def verdict_line(archs: Sequence[Arch], name: Callable[[str], str] = str) -> str:
    """The headline; ``name`` shows an architecture key (``plain`` in Markdown)."""
    n = sum(len(a.diffs) for a in archs)
    failed = [a for a in archs if a.failed]
    if not failed:
        return f"no regression on {len(archs)} architecture(s), {n} benchmark(s)"
    parts = [
        f"{name(a.arch)} (no report)"
        if a.missing
        else f"{name(a.arch)} ({len(a.failing)} of {len(a.diffs)} benchmarks"
        + (f"; {len(a.reasons)} more reason(s) its run failed)" if a.reasons else ")")
        for a in failed
    ]
    word = "failed" if any(a.reasons for a in failed) else "regression"  # not only regressions
    return f"{word} on {len(failed)} of {len(archs)} architecture(s): {', '.join(parts)}"


def _table(archs: Sequence[Arch]) -> list[str]:
    rows = ["| architecture | verdict | benchmarks | failed | passed |", "|---|:-:|--:|--:|--:|"]
    for a in archs:
        mark = "❌ no report" if a.missing else ("❌" if a.failed else "✅")
        passed = len(a.diffs) - len(a.failing)
        rows.append(f"| {plain(a.arch)} | {mark} | {len(a.diffs)} | {len(a.failing)} | {passed} |")
    return rows


def markdown(archs: Sequence[Arch], footer: str = "", limit: int = report_markdown.COMMENT_LIMIT) -> str:
    """The PR comment: overall verdict, one row per architecture, then a section per architecture;
    shortened (no kernel and unchanged tables) where it would exceed ``limit``."""
    failed = any(a.failed for a in archs)

    def lines_for(compact: bool) -> list[str]:
        lines = [
            report_markdown.MARKER,
            f"### {'❌' if failed else '✅'} kernelgate: {verdict_line(archs, plain)}",
            "",
            *_table(archs),
            "",
        ]
        for a in archs:
            lines += [f"## {'❌' if a.failed else '✅'} {plain(a.arch)}", ""]
            if a.missing:
                lines += ["No report from this architecture's runner: its gate failed before comparing. "
                          "See the run's log.", ""]  # fmt: skip
                continue
            if a.reasons:
                lines += ["**This architecture's run fails (exit status 1):**", ""]
                lines += [f"- {plain(r)}" for r in a.reasons] + [""]
            lines += report_markdown.body(a.diffs, compact) if a.diffs else []
        return lines

    return report_markdown.fit(lines_for, footer, limit)


def merge(paths: Sequence[Path], out: Path, expect: Sequence[str] = (), footer: str = "") -> Merged:
    """Write report.md and report.html of all ``paths`` into ``out`` (and the traces they link)."""
    if not paths and not expect:
        raise MergeError("no report to merge: give the report folders of the runners (e.g. reports/*/report)")
    sources = {(p if p.is_dir() else p.parent).resolve() for p in paths}
    if out.resolve() in sources:
        raise MergeError(f"--out {out} is one of the reports to merge: write the merged report elsewhere")
    found = load(paths, expect)
    out.mkdir(parents=True, exist_ok=True)
    if (out / TRACES).is_dir():
        shutil.rmtree(out / TRACES)
    reasons: dict[str, tuple[str, ...]] = {}
    for path in paths:
        arch, why = report_data.run_reasons(path)
        if why:
            reasons[arch] = reasons.get(arch, ()) + why
    for arch in reasons:
        found.setdefault(arch, {})
    archs = tuple(
        Arch(
            arch,
            tuple(_copy_traces(*benchmarks[name], out) for name in sorted(benchmarks)),
            reasons.get(arch, ()),
        )
        for arch, benchmarks in sorted(found.items())
    )
    failed = any(a.failed for a in archs)
    (out / MARKDOWN).write_text(markdown(archs, footer), encoding="utf-8")
    groups = [(a.arch, a.diffs) for a in archs]
    (out / HTML).write_text(report_html.render_merged(groups, verdict_line(archs), failed), encoding="utf-8")
    return Merged(out, failed, archs)
