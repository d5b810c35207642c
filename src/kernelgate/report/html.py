"""One self-contained HTML file with plots: opens offline, fetches nothing, runs no script.

Jinja2 (autoescaped) renders report_page.html.j2 (report_merged.html.j2 for several runners) and,
per benchmark, report_section.html.j2; the plots are inline SVG from :mod:`kernelgate.report.plots`. A
Content-Security-Policy in the page forbids every fetch and every script, so a browser shows it
exactly as written.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import jinja2
from markupsafe import Markup

from kernelgate.measure.naming import kernel_label, module_label
from kernelgate.report import labels, plots
from kernelgate.report.markdown import group_summary, verdict_line
from kernelgate.report.sections import RunOutcome, headline_suffix, tally, unshown
from kernelgate.verdict.compare import Delta, Verdict
from kernelgate.verdict.diff import BenchmarkDiff

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

PAGE = "report_page.html.j2"
SECTION = "report_section.html.j2"
MERGED = "report_merged.html.j2"  # several architectures: kernelgate report merge


def _markup(line: str) -> Markup:
    """A Markdown verdict line with its code spans as ``<code>``; everything else escaped."""
    return Markup(re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(line)))


def breakable(text: str) -> Markup:
    """``text`` escaped, in unbreakable pieces with a line-break opportunity (``<wbr>``) after each
    ``::``, ``<`` and ``,``: a kernel name such as ``at::native::vectorized_elementwise_kernel<4, …>``
    wraps at its scopes and template arguments on a narrow screen, never inside a word, and its
    blanks do not break it either (each piece is ``white-space: nowrap``)."""
    return Markup("<wbr>").join(Markup('<span class="nb">{}</span>').format(p) for p in _pieces(text))


def wbr(text: str) -> Markup:
    """Prose that may name kernels (a hint): escaped, with a line-break opportunity after each ``::``,
    ``<`` and ``,``; it wraps at its blanks as any text does."""
    return Markup("<wbr>").join(Markup.escape(p) for p in _pieces(text))


def _pieces(text: str) -> list[str]:
    return [p for p in re.split(r"(?<=::)|(?<=<)|(?<=,)", str(text)) if p]


def _html_verdict(diffs: Sequence[BenchmarkDiff]) -> Markup:
    return _markup(verdict_line(diffs))


def badge(failed: bool) -> Markup:
    return Markup(
        '<span class="badge fail">FAIL</span>' if failed else '<span class="badge pass">PASS</span>'
    )


def _setup(diffs: Sequence[BenchmarkDiff]) -> tuple[jinja2.Environment, dict[str, Any]]:
    """The template environment and what every page passes to its templates."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kernelgate.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
    )
    failures: set[Delta] = set().union(*(d.comparison.failures for d in diffs))

    def rowclass(delta: Delta) -> str:
        if delta in failures:
            return "failing"
        return "improved" if delta.verdict is Verdict.IMPROVED else ""

    helpers = {
        "us": labels.us,
        "sus": labels.signed_us,
        "pct": labels.pct,
        "calls": labels.calls,
        "p": labels.p_value,
        "threshold": labels.threshold,
        "klabel": lambda name: breakable(kernel_label(name.partition(" :: ")[2] or name)),
        "kname": lambda name: breakable(name.partition(" :: ")[2] or name),
        "breakable": breakable,
        "wbr": wbr,
        "mod": lambda name, layer: module_label(name.partition(" :: ")[0], layer),
        "rowclass": rowclass,
        "badge": badge,
        "share": lambda split: f"{100 * split.busy_share:.0f} %",
        "group_summary": group_summary,
    }
    section = env.get_template(SECTION)

    def render_section(d: BenchmarkDiff) -> Markup:
        svg = {
            "layers": Markup(plots.layer_deltas(d)),
            "breakdown": Markup(plots.total_breakdown(d)),
            "history": Markup(plots.history(d)) if d.history else "",
        }
        hints = [(f"{lay.delta.name} {lay.type}".strip(), h) for lay in d.layers for h in lay.hints]
        hints += [(d.benchmark, h) for h in d.hints]
        return Markup(
            section.render(d=d, svg=svg, hints=hints, time_name=labels.device_time(d.arch), **helpers)
        )

    page = {
        "csp": CSP,
        "section": render_section,
        "pct": labels.pct,
        "badge": badge,
        "breakable": breakable,
        "wbr": wbr,
        "time_name": labels.time_name(diffs),
    }
    return env, page


def render(diffs: Sequence[BenchmarkDiff], run: RunOutcome | None = None) -> str:
    """The page of one run. With ``run`` its badge is the run's decision (as report.md's mark), and it
    lists why the run fails beyond the sections (a benchmark not compared, a cold start) and what the
    same-host judge decided for each suspect."""
    env, page = _setup(diffs)
    verdict = (verdict_line(diffs) if diffs else "kernelgate: no benchmark compared") + headline_suffix(
        diffs, run
    )
    judged = run.judged if run is not None else ()
    return env.get_template(PAGE).render(
        **page,
        title=", ".join(sorted({d.arch for d in diffs})),
        verdict=_markup(verdict),
        diffs=diffs,
        passing=[d for d in diffs if not d.failed],
        failed=run.decision.failed if run is not None else any(d.failed for d in diffs),
        reasons=unshown(diffs, run),
        judged=judged,
        judged_tally=tally(judged),
    )


def render_merged(groups: Sequence[tuple[str, Sequence[BenchmarkDiff]]], verdict: str, failed: bool) -> str:
    """One page of several architectures (``kernelgate report merge``): a summary table, then a
    section per ``(architecture, its diffs)``; an architecture without diffs sent no report."""
    everything = [d for _, diffs in groups for d in diffs]
    env, page = _setup(everything)
    sections = [
        {
            "arch": arch,
            "diffs": diffs,
            "failing": [d for d in diffs if d.failed],
            "passing": [d for d in diffs if not d.failed],
            "missing": not diffs,
            "failed": not diffs or any(d.failed for d in diffs),
            "verdict": _html_verdict(diffs) if diffs else "",
        }
        for arch, diffs in groups
    ]
    return env.get_template(MERGED).render(
        **page,
        title=", ".join(arch for arch, _ in groups),
        verdict=_markup(verdict),
        groups=sections,
        failed=failed,
    )
