"""One self-contained HTML file with plots: opens offline, fetches nothing, runs no script.

Jinja2 (autoescaped) renders report_page.html.j2 and, per benchmark, report_section.html.j2; the
plots are inline SVG from :mod:`kernelgate.plots`. A
Content-Security-Policy in the page forbids every fetch and every script, so a browser shows it
exactly as written.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import jinja2
from markupsafe import Markup

from kernelgate import labels, plots
from kernelgate.compare import Delta, Verdict
from kernelgate.diff import BenchmarkDiff
from kernelgate.labels import kernel_label, module_label
from kernelgate.report_markdown import group_summary, verdict_line

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

PAGE = "report_page.html.j2"
SECTION = "report_section.html.j2"


def _html_verdict(diffs: Sequence[BenchmarkDiff]) -> Markup:
    """The Markdown verdict line with its code spans as ``<code>``; everything else escaped."""
    text = html.escape(verdict_line(diffs))
    return Markup(re.sub(r"`([^`]*)`", r"<code>\1</code>", text))


def badge(failed: bool) -> Markup:
    return Markup(
        '<span class="badge fail">FAIL</span>' if failed else '<span class="badge pass">PASS</span>'
    )


def render(diffs: Sequence[BenchmarkDiff]) -> str:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kernelgate", "."),
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
        "klabel": lambda name: kernel_label(name.partition(" :: ")[2] or name),
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
        return Markup(section.render(d=d, svg=svg, hints=hints, **helpers))

    page = env.get_template(PAGE)
    return page.render(
        csp=CSP,
        title=", ".join(sorted({d.arch for d in diffs})),
        verdict=_html_verdict(diffs),
        diffs=diffs,
        passing=[d for d in diffs if not d.failed],
        section=render_section,
        pct=labels.pct,
        badge=badge,
        failed=any(d.failed for d in diffs),
    )
