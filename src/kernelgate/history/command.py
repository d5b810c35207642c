"""``kernelgate history add|show|publish``, ``kernelgate changes`` and ``kernelgate bisect``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kernelgate import config, exits
from kernelgate.history import abjudge, changes, nights, publish
from kernelgate.history import bisect as bisecting

HISTORY_DIR = ".kernelgate/nights"  # .kernelgate/history is the action's (older baselines)


def _folder(args: argparse.Namespace) -> Path:
    return Path(args.dir)


def _gate(path: str) -> config.GateConfig:
    file = Path(path)
    return config.load_pyproject(file)[0] if file.is_file() else config.GateConfig()


def _archs(folder: Path, arch: str | None) -> list[str]:
    if arch:
        return [arch]
    found = sorted(p.name.removesuffix(nights.SUFFIX) for p in folder.glob(f"*{nights.SUFFIX}"))
    if not found:
        raise exits.InputError(
            f"no history in {folder} (no *{nights.SUFFIX}); add a night: kernelgate history add "
            f".kernelgate/results/<arch>/0001_kernelgate.json --dir {folder}"
        )
    return found


def _add(args: argparse.Namespace) -> int:
    for name in args.results:
        try:
            night = nights.night_of(Path(name), args.commit, args.date, args.run_url)
            path, stored = nights.add(_folder(args), night)
        except nights.HistoryError as exc:
            raise exits.InputError(str(exc)) from exc
        host = night.host.short() if night.host else "host unknown"
        print(f"kernelgate history: {night.short()} {night.arch}, {len(night.configs)} configuration(s), "
              f"{host}: {path} holds {len(stored)} night(s)")  # fmt: skip
    return 0


def _load(folder: Path, arch: str) -> list[nights.Night]:
    try:
        return nights.load(nights.path_for(folder, arch))
    except nights.HistoryError as exc:
        raise exits.InputError(str(exc)) from exc


def _show(args: argparse.Namespace) -> int:
    for arch in _archs(_folder(args), args.arch):
        found = _load(_folder(args), arch)[-args.last :]
        print(f"{arch}: {len(found)} night(s)")
        for night in found:
            soft = ", ".join(
                f"{k} {night.software[k]}" for k in ("driver", "torch", "cudnn") if k in night.software
            )
            line = (
                f"  {night.short()} host {night.host_id or '?'} {soft}; {len(night.configs)} configuration(s)"
            )
            config_ = night.configs.get(args.benchmark) if args.benchmark else None
            if config_ is not None:
                figure = config_.figure(args.figure or nights.TOTAL)
                value = (
                    "-"
                    if figure is None
                    else f"{figure.median:.3f} µs (rounds {', '.join(f'{r:.3f}' for r in figure.rounds)})"
                )
                line += f"; {args.benchmark} {args.figure or 'total'}: {value}"
            print(line)
    return 0


def _changes(args: argparse.Namespace) -> int:
    gate = _gate(args.config)
    found: list[changes.Change] = []
    counted = 0
    for arch in _archs(_folder(args), args.arch):
        history = _load(_folder(args), arch)
        counted = max(counted, len(history))
        try:
            found += changes.find(history, gate, max_pvalue=args.max_pvalue, window=args.window)
        except changes.DetectorMissing as exc:
            raise exits.InputError(str(exc)) from exc
    for change in found:
        print(("slower: " if change.slower else "faster: ") + change.describe())
    if not found:
        print(f"kernelgate changes: no step change over {counted} night(s)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps([c.to_json() for c in found], indent=1) + "\n", encoding="utf-8"
        )
    code_slowdowns = [c for c in found if c.slower and not c.runner]
    return 1 if args.fail and code_slowdowns else 0


def _judge(
    args: argparse.Namespace, pytest_args: list[str], benchmark: str | None, figure: str | None
) -> bisecting.Judge:
    return abjudge.AbJudge(Path.cwd(), Path(args.config), tuple(pytest_args), args.rounds, benchmark, figure)


def _bisect(args: argparse.Namespace) -> int:
    deadline = None if args.minutes is None else time.monotonic() + 60.0 * args.minutes
    if args.changes:
        if args.good or args.bad or args.pytest_args:
            raise exits.InputError("kernelgate bisect --changes FILE takes no GOOD, BAD or pytest arguments")
        return _bisect_changes(args, deadline)
    if not args.good or not args.bad:
        raise exits.InputError("give GOOD and BAD: kernelgate bisect GOOD BAD -- benchmarks -k CONFIG")
    pytest_args = args.pytest_args or ["benchmarks"]
    target = " ".join(pytest_args) + (f", {args.figure}" if args.figure else "")
    try:
        plan = bisecting.plan(Path.cwd(), args.good, args.bad, target)
        if args.dry_run:
            print("\n".join(plan.lines()))
            return 0
        print("\n".join(plan.lines()))
        judge = _judge(args, pytest_args, args.benchmark, args.figure)
        result = bisecting.bisect(plan, judge, Path(args.out), deadline=deadline)
    except bisecting.BisectError as exc:
        raise exits.InputError(str(exc)) from exc
    return 0 if result.status in (bisecting.Status.FOUND, bisecting.Status.EMPTY) else 1


def _bisect_changes(args: argparse.Namespace, deadline: float | None) -> int:
    """Each code slowdown's commit range of a ``kernelgate changes --json`` file, bisected once;
    ranges bisected on an earlier night (``--history``) are not measured again."""
    try:
        found = [
            changes.Change.from_json(c) for c in json.loads(Path(args.changes).read_text(encoding="utf-8"))
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise exits.InputError(f"{args.changes}: not a `kernelgate changes --json` file ({exc})") from exc
    history = Path(args.history) if args.history else None
    done = {
        k: v
        for arch in {c.arch for c in found}
        for k, v in (publish.known(history, arch) if history else {}).items()
    }
    results: dict[str, dict[str, Any]] = {}
    unfinished = False
    for i, span in enumerate(changes.to_bisect(found)):
        key = publish.range_key(span.good, span.bad)
        if key in done:
            print(f"kernelgate bisect: {span.good[:12]}..{span.bad[:12]} was bisected on an earlier night")
            results[key] = done[key]
            continue
        target = span.target
        try:
            plan = bisecting.plan(Path.cwd(), span.good, span.bad, f"{target.fullname}, {target.figure}")
            print("\n".join(plan.lines()))
            if args.dry_run:
                continue
            judge = _judge(args, [target.fullname], target.benchmark, target.figure)
            result = bisecting.bisect(plan, judge, Path(args.out) / f"range-{i + 1:02d}", deadline=deadline)
        except bisecting.BisectError as exc:
            print(f"kernelgate bisect: {span.good[:12]}..{span.bad[:12]}: {exc}")
            unfinished = True
            continue
        results[key] = result.to_json()
        if result.status in (bisecting.Status.FOUND, bisecting.Status.EMPTY) and history is not None:
            publish.remember(history, target.arch, span.good, span.bad, results[key])
        unfinished |= result.status is bisecting.Status.UNFINISHED
    out = Path(args.out) / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 1 if unfinished else 0


def _publish(args: argparse.Namespace) -> int:
    try:
        found = [
            changes.Change.from_json(c) for c in json.loads(Path(args.changes).read_text(encoding="utf-8"))
        ]
        results = (
            json.loads(Path(args.bisections).read_text(encoding="utf-8"))
            if args.bisections and Path(args.bisections).exists()
            else {}
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise exits.InputError(f"{args.changes}: not a `kernelgate changes --json` file ({exc})") from exc
    counted = max((len(_load(_folder(args), a)) for a in {c.arch for c in found}), default=0)
    out = Path(args.out)
    (out / "issues").mkdir(parents=True, exist_ok=True)
    (out / "summary.md").write_text(publish.summary(found, results, counted), encoding="utf-8")
    made = publish.issues(found, results, args.run_url)
    for i, issue in enumerate(made, 1):
        (out / "issues" / f"{i:03d}.json").write_text(json.dumps(issue, indent=1) + "\n", encoding="utf-8")
    print(f"kernelgate history: {out / 'summary.md'} and {len(made)} issue(s) in {out / 'issues'}")
    return 0


def add_parsers(sub: Any) -> None:
    """The three commands, on the ``kernelgate`` command's subparsers."""
    hist = sub.add_parser("history", help="main's nightly results, night by night (add, show, publish)")
    verbs = hist.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="keep a results file's night in <dir>/<arch>.jsonl")
    add.add_argument("results", nargs="+", help="e.g. .kernelgate/results/<arch>/0001_kernelgate.json")
    add.add_argument("--dir", default=HISTORY_DIR, help="the history folder (default %(default)s)")
    add.add_argument("--commit", help="the night's commit (default: the file's commit_info)")
    add.add_argument("--date", help="the night's date, ISO 8601 (default: the file's)")
    add.add_argument("--run-url", default="", help="where it ran, e.g. the workflow run's URL")
    add.set_defaults(run=_add)
    show = verbs.add_parser("show", help="list the nights (and one figure of one configuration)")
    show.add_argument("--dir", default=HISTORY_DIR)
    show.add_argument("--arch", help="one architecture (default: every file in --dir)")
    show.add_argument("--benchmark", help="a configuration, e.g. yolov8n-fp16-bs1-640")
    show.add_argument("--figure", help="a layer of it, e.g. model.9 (default: the total)")
    show.add_argument("--last", type=int, default=30, help="the last N nights (default %(default)s)")
    show.set_defaults(run=_show)
    pub = verbs.add_parser("publish", help="the job summary and one issue file per slowdown")
    pub.add_argument("changes", help="the file of kernelgate changes --json")
    pub.add_argument("--bisections", help="the results.json of kernelgate bisect --changes")
    pub.add_argument("--dir", default=HISTORY_DIR)
    pub.add_argument("--out", default=".kernelgate/history-out", help="default %(default)s")
    pub.add_argument("--run-url", default="", help="the workflow run, for the issue's last line")
    pub.set_defaults(run=_publish)

    chg = sub.add_parser(
        "changes", help="step changes per configuration, layer and total over the history (Apache Otava)"
    )
    chg.add_argument("--dir", default=HISTORY_DIR)
    chg.add_argument("--arch", help="one architecture (default: every file in --dir)")
    chg.add_argument(
        "--config", default="pyproject.toml", help="thresholds from this file's [tool.kernelgate]"
    )
    chg.add_argument("--max-pvalue", type=float, default=changes.DEFAULT_PVALUE, help="default %(default)s")
    chg.add_argument(
        "--window", type=int, default=changes.DEFAULT_WINDOW, help="nights per E-Divisive window"
    )
    chg.add_argument("--json", help="write the changes to this file (for bisect --changes and publish)")
    chg.add_argument("--fail", action="store_true", help="exit 1 when the code slowed a figure down")
    chg.set_defaults(run=_changes)

    bis = sub.add_parser(
        "bisect",
        help="find the first bad commit between GOOD and BAD with the same-host judge on this runner",
        description="Options come before GOOD and BAD: kernelgate bisect --dry-run GOOD BAD -- benchmarks "
        "-k CONFIG (after the positional arguments argparse takes no more options).",
    )
    bis.add_argument("good", nargs="?", help="the last good commit (the last good night's)")
    bis.add_argument("bad", nargs="?", help="a bad commit (the first bad night's)")
    bis.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: benchmarks)")
    bis.add_argument("--benchmark", help="the configuration that decides (default: any that fails)")
    bis.add_argument("--figure", help=f"its layer, or {nights.TOTAL!r} (default: any failing figure)")
    bis.add_argument("--changes", help="bisect each code slowdown of this kernelgate changes --json file")
    bis.add_argument("--history", help="with --changes: the history folder that keeps finished bisections")
    bis.add_argument("--rounds", type=int, default=3, help="A/B rounds per side and judge run (default 3)")
    bis.add_argument("--minutes", type=float, help="start no judge run after this many minutes")
    bis.add_argument(
        "--out", default=".kernelgate/bisect", help="state and scratch folder (default %(default)s)"
    )
    bis.add_argument("--config", default="pyproject.toml")
    bis.add_argument("--dry-run", action="store_true", help="print the plan only")
    bis.set_defaults(run=_bisect)
