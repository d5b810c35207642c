"""What the nightly publishes of the changes it found: the job summary (Markdown) and one issue per
slowdown (a JSON file each: key, title, body), and the bisections already done (kept beside the
history, so a change found again next night is not bisected again).

An issue's body starts with a hidden marker holding the change's key (architecture, configuration,
figure, first bad night's commit), by which the workflow finds the issue it opened on an earlier
night and updates it instead of opening another.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelgate.history.changes import Change
from kernelgate.history.nights import TOTAL

MARKER = "<!-- kernelgate-change: {key} -->"
BISECTIONS = "bisections"  # <history>/bisections/<arch>.jsonl: one file per job of the nightly


def range_key(good: str, bad: str) -> str:
    return f"{good}..{bad}"


def known(folder: Path, arch: str) -> dict[str, dict[str, Any]]:
    """The finished bisections of ``arch`` kept in ``folder`` by commit range (``good..bad``)."""
    path = folder / BISECTIONS / f"{arch}.jsonl"
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            out[str(data["range"])] = dict(data["result"])
    return out


def remember(folder: Path, arch: str, good: str, bad: str, result: Mapping[str, Any]) -> None:
    (folder / BISECTIONS).mkdir(parents=True, exist_ok=True)
    with (folder / BISECTIONS / f"{arch}.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({"range": range_key(good, bad), "result": result}, separators=(",", ":")) + "\n")


def _figure(change: Change) -> str:
    return "total" if change.figure == TOTAL else change.figure


def culprit_text(change: Change, result: Mapping[str, Any] | None) -> str:
    if change.runner:
        return f"the runner ({'; '.join(change.coincides)})"
    if result is None:
        return f"between {change.last_good.commit[:12]} and {change.first_bad.commit[:12]} (not bisected)"
    if result.get("status") == "found" and result.get("culprit"):
        return f"first bad commit {str(result['culprit'])[:12]}"
    return str(result.get("headline", "bisection unfinished"))


def title(change: Change, result: Mapping[str, Any] | None) -> str:
    return (
        f"kernelgate: {change.benchmark} {_figure(change)} {change.size:+.1%} on {change.arch}: "
        f"{culprit_text(change, result)}"
    )[:250]


def body(change: Change, result: Mapping[str, Any] | None, run_url: str) -> str:
    lines = [
        MARKER.format(key=change.key),
        f"**{change.describe()}**",
        "",
        "| | |",
        "|---|---|",
        f"| configuration | `{change.benchmark}` (`{change.fullname}`) |",
        f"| figure | {_figure(change)} |",
        f"| size | {change.size_text()}, p = {change.p_value:.2g} |",
        f"| last good night | {change.last_good.date} `{change.last_good.commit}` |",
        f"| first bad night | {change.first_bad.date} `{change.first_bad.commit}` |",
        f"| cause | {culprit_text(change, result)} |",
    ]
    if result is not None:
        lines += ["", f"Bisection: {result.get('headline', '')}", ""]
        for step in result.get("steps", []):
            outcome = step["outcome"]
            size = "" if outcome.get("size") is None else f" {outcome['size']:+.2%}"
            lines.append(
                f"- `{step['commit'][:12]}`: {outcome['verdict']}{size} ({outcome.get('detail', '')})"
            )
    if change.runner:
        lines += ["", "The step coincides with a change of the runner, not of the code: it was not bisected."]
    else:
        lines += [
            "",
            "Measure it again on a runner of this architecture: "
            f"`kernelgate bisect {change.last_good.commit[:12]} {change.first_bad.commit[:12]} "
            f"--benchmark {change.benchmark} --figure {change.figure} -- {change.fullname}`",
        ]
    if run_url:
        lines += ["", f"Found by the nightly run {run_url}."]
    return "\n".join(lines) + "\n"


def summary(changes: Sequence[Change], results: Mapping[str, Mapping[str, Any]], nights: int) -> str:
    """The job summary: every change, slowdowns first, with its bisection where there is one."""
    if not changes:
        return f"## kernelgate history\n\nNo step change over {nights} night(s).\n"
    lines = [
        "## kernelgate history: step changes",
        "",
        f"{len(changes)} change(s) over {nights} night(s).",
        "",
        "| configuration | figure | size | last good → first bad | cause |",
        "|---|---|---|---|---|",
    ]
    for c in sorted(changes, key=lambda c: (not c.slower, -abs(c.size))):
        found = results.get(range_key(c.last_good.commit, c.first_bad.commit))
        good, bad = c.last_good, c.first_bad
        span = f"{good.date[:10]} `{good.commit[:12]}` → {bad.date[:10]} `{bad.commit[:12]}`"
        cause = culprit_text(c, found) if c.slower else "faster"
        lines.append(f"| `{c.benchmark}` | {_figure(c)} | {c.size_text()} | {span} | {cause} |")
    return "\n".join(lines) + "\n"


def issues(
    changes: Sequence[Change], results: Mapping[str, Mapping[str, Any]], run_url: str
) -> list[dict[str, str]]:
    """One issue per slowdown (key, title, body)."""
    out = []
    for c in changes:
        if not c.slower:
            continue
        found = results.get(range_key(c.last_good.commit, c.first_bad.commit))
        out.append({"key": c.key, "title": title(c, found), "body": body(c, found, run_url)})
    return out
