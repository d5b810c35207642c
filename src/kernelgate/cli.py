"""The ``kernelgate`` command: the architecture key, offline comparison of result files, reports (also
merged from several runners), the machine's fitness to benchmark (``doctor``), cold-start
measurements (``coldstart``) and the time per layer group of result files (``groups``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from kernelgate import __version__, cli_baseline, config, exits, offline
from kernelgate import replay as judge_replay
from kernelgate.baseline import hosts as baseline_hosts
from kernelgate.baseline import reading as baseline
from kernelgate.baseline.errors import BaselineError
from kernelgate.coldstart import command
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.history import command as history_command
from kernelgate.machine.identity import detect_arch_key
from kernelgate.measure.results import Measurement
from kernelgate.verdict import policy

# exit statuses (kernelgate.exits, docs/silent-pass.md "Exit statuses"): 0 pass, 1 a verdict failed the
# run, 2 bad input or usage, 3 kernelgate itself failed
INTERNAL_ERROR = exits.INTERNAL_ERROR


def _arch(args: argparse.Namespace) -> int:
    key = detect_arch_key(force_cpu=args.cpu)
    print(baseline.path_for(Path(args.baseline_dir), key) if args.path else key)
    return 0


def _compare(args: argparse.Namespace) -> int:
    try:
        gate, _ = config.load_pyproject(Path(args.config))
        base = baseline.load(Path(args.baseline))
        current = baseline.load(Path(args.current))
    except (BaselineError, config.ConfigError) as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    pairs = offline.judge(base, current, gate, args.baseline, processes=getattr(args, "processes", False))
    for pair in pairs:
        print("\n".join(offline.lines(pair, args.baseline, args.all)))
    return _decide(pairs, gate, args, len(base)).exit_code


def _decide(
    pairs: Sequence[offline.Pair], gate: config.GateConfig, args: argparse.Namespace, base_count: int
) -> policy.ExitDecision:
    """The exit of ``compare`` and ``report``: :func:`kernelgate.verdict.policy.decide`, as a run's."""
    decision, empty = offline.decide(pairs, gate, args.baseline, args.current, base_count)
    for line in decision.warnings:
        print(f"warning: {line}")
    if empty is not None and decision.failed:
        print(empty, file=sys.stderr)
    return decision


def _record(args: argparse.Namespace) -> int:
    from kernelgate.verdict.ab import record

    return record(args.rounds, args.pytest_args or ["benchmarks"], Path.cwd(), args.append)


def _ab(args: argparse.Namespace) -> int:
    from kernelgate.verdict.ab import run_ab

    work, pytest_args = Path(args.work).resolve(), args.pytest_args or ["benchmarks"]
    files = run_ab(Path.cwd(), args.base, args.rounds, pytest_args, work, Path(args.config))
    if files is None:
        return 2
    base, head = files
    print(f"kernelgate: A/B {args.base} (base) vs the working tree (head), {args.rounds} rounds each")
    # each round a fresh process of each side on this runner: the process is the unit of the test
    given = {"baseline": str(base), "current": str(head), "config": args.config, "all": args.all}
    return _compare(argparse.Namespace(**given, processes=True))


def _gate_config(args: argparse.Namespace) -> config.GateConfig:
    """``[tool.kernelgate]`` of ``--config``, the defaults where that file does not exist (a bad one is
    a :class:`~kernelgate.config.ConfigError`: exit 2, as :func:`_run` says)."""
    path = Path(args.config)
    return config.load_pyproject(path)[0] if path.is_file() else config.GateConfig()


def _doctor(args: argparse.Namespace) -> int:
    from kernelgate.machine import doctor, fitness

    facts = doctor.gather(Path(args.baseline_dir), coldverdict.recorded_cache_bytes, baseline_hosts.recorded)
    facts = dataclasses.replace(facts, threads_configured=_gate_config(args).threads)
    findings = fitness.diagnose(facts)
    sys.stdout.write((doctor.to_json if args.json else doctor.render)(facts, findings, args.strict))
    return fitness.exit_code(findings, args.strict)


def _report(args: argparse.Namespace) -> int:
    from kernelgate.report import publish, trace_store
    from kernelgate.report.sections import RunOutcome

    gate, _ = config.load_pyproject(Path(args.config))
    base_path, current_path = Path(args.baseline), Path(args.current)
    try:
        base = baseline.load(base_path)
        current = baseline.load(current_path)
    except BaselineError as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    history, notes = publish.load_history(Path(args.history) if args.history else None, current)
    pairs = offline.judge(base, current, gate, args.baseline)
    items = []
    for pair in pairs:
        notes += [f"{pair.case.benchmark}: {pair.note}"] if pair.note else []
        if pair.comparison is None or pair.cold is not None or pair.base is None or pair.current is None:
            continue
        fullname, m = pair.current.fullname, pair.current.measurement
        items.append(
            publish.Item(
                pair.comparison,
                pair.base.measurement,
                m,
                tuple(history.get(fullname, ())),
                trace_store.beside(base_path, m.benchmark),
                trace_store.current_trace(Path(args.traces), fullname) if args.traces else None,
            )
        )
    decision = _decide(pairs, gate, args, len(base))
    run = RunOutcome(
        decision,
        tuple(p.case for p in pairs if p.comparison is None),
        tuple(p.comparison for p in pairs if p.cold is not None and p.comparison is not None),
        next((e.measurement.arch for e in current.values()), ""),
    )
    published = publish.publish(items, Path(args.out), redact=args.redact, run=run)
    for line in [published.headline, *published.lines(), *notes]:
        print(line)
    for case in run.not_compared:
        print(policy.describe(case))
    return decision.exit_code


def _merge(argv: Sequence[str]) -> int:
    from kernelgate.report import merge as report_merge

    parser = argparse.ArgumentParser(
        prog="kernelgate report merge",
        description="One report.md (PR comment) and report.html of several runners, a section per "
        "architecture, with the verdicts each runner decided (exit 1 on regression or a missing runner).",
    )
    parser.add_argument(
        "reports", nargs="*", help="report folders (or their report-data.json), one per runner"
    )
    parser.add_argument(
        "--out", default=".kernelgate/merged", help="merged report folder (default %(default)s)"
    )
    parser.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="ARCH",
        help="an architecture that must be in the report: without one it shows, and fails, as 'no report'",
    )
    parser.add_argument("--footer", default="", help="a last line for the Markdown (e.g. a link to the run)")
    args = parser.parse_args(argv)
    try:
        merged = report_merge.merge([Path(r) for r in args.reports], Path(args.out), args.expect, args.footer)
    except report_merge.MergeError as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    for line in merged.lines():
        print(line)
    return 1 if merged.failed else 0


def _groups(args: argparse.Namespace) -> int:
    from kernelgate.measure import grouped
    from kernelgate.report import groups as report_groups

    measurements: list[Measurement] = []
    sources: list[str] = []
    for name in args.results:
        try:
            entries = baseline.load(Path(name))
        except BaselineError as exc:
            print(f"kernelgate: {exc}", file=sys.stderr)
            return 2
        found = [e.measurement for e in entries.values() if coldverdict.record_of(e) is None]
        measurements += [grouped.inferred(m) for m in found] if args.infer else found
        sources += [name] * len(found)
    if not measurements:
        print(f"kernelgate: no kernel benchmark in {', '.join(args.results)}", file=sys.stderr)
        return 2
    table = report_groups.frame(measurements, report_groups.short_names(sources))
    render = {"md": report_groups.to_markdown, "csv": report_groups.to_csv, "text": report_groups.to_text}
    sys.stdout.write(render[args.format](table))
    return 0


def _replay(args: argparse.Namespace) -> int:
    import lzma

    gate = _gate_config(args)
    found: list[judge_replay.Replayed] = []
    for name in args.records:
        try:
            found += judge_replay.replay(Path(name), gate)
        except (OSError, ValueError, KeyError, TypeError, EOFError, lzma.LZMAError) as exc:
            raise exits.InputError(
                f"{name}: not a same-host judge's records file ({type(exc).__name__}: {exc}); it is "
                f"<--kernelgate-out>/{judge_replay.RECORDS} of a run whose judge measured"
            ) from exc
    if not found:
        raise exits.InputError(f"no kernel suspect in {', '.join(args.records)}")
    for line in judge_replay.lines(found):
        print(line)
    return 1 if judge_replay.failed(found) else 0


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:2] == ["report", "merge"]:
        return exits.guarded("report merge", given, lambda: _merge(given[2:]))
    parser = argparse.ArgumentParser(prog="kernelgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kernelgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    arch = sub.add_parser("arch", help="print this machine's baseline key (read through NVML)")
    arch.add_argument("--cpu", action="store_true", help="the key of CPU mode")
    arch.add_argument("--path", action="store_true", help="print the baseline file's path instead")
    arch.add_argument("--baseline-dir", default="baselines")
    arch.set_defaults(run=_arch)
    cmp = sub.add_parser("compare", help="compare two result files (exit 1 on regression)")
    cmp.add_argument("baseline", help="e.g. baselines/<arch>/0001_kernelgate.json")
    cmp.add_argument("current", help="e.g. .kernelgate/results/<arch>/0001_kernelgate.json")
    cmp.add_argument(
        "--config", default="pyproject.toml", help="thresholds from this file's [tool.kernelgate]"
    )
    cmp.add_argument("--all", action="store_true", help="also print every layer's delta")
    cmp.set_defaults(run=_compare)
    rec = sub.add_parser("record", help="record baselines in several rounds (separate pytest processes)")
    rec.add_argument("--rounds", type=int, default=3)
    rec.add_argument("--append", action="store_true", help="append every round (e.g. another runner's)")
    rec.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: benchmarks)")
    rec.set_defaults(run=_record)
    ab = sub.add_parser(
        "ab", help="A/B a git ref against the working tree on this GPU (exit 1 on regression)"
    )
    ab.add_argument("--base", required=True, help="git ref to compare against, e.g. origin/main or HEAD~1")
    ab.add_argument(
        "--rounds", type=int, default=3, help="rounds per side, alternating which side goes first (default 3)"
    )
    ab.add_argument("--work", default=".kernelgate/ab", help="scratch folder (default .kernelgate/ab)")
    ab.add_argument("--config", default="pyproject.toml")
    ab.add_argument("--all", action="store_true", help="also print every layer's delta")
    ab.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: benchmarks)")
    ab.set_defaults(run=_ab)

    doc = sub.add_parser("doctor", help="is this machine fit to benchmark? (exit 1 if not)")
    doc.add_argument("--json", action="store_true", help="facts and findings as JSON")
    doc.add_argument("--strict", action="store_true", help="warnings make it unfit too")
    doc.add_argument("--baseline-dir", default="baselines")
    doc.add_argument("--config", default="pyproject.toml", help="threads from this file's [tool.kernelgate]")
    doc.set_defaults(run=_doctor)
    command.add_parser(sub)

    rep = sub.add_parser(
        "report",
        help="write report.md, report.html, report.json for two result files (exit 1 on regression); "
        "'kernelgate report merge REPORT... --out DIR' merges the reports of several runners",
    )
    rep.add_argument("baseline", help="e.g. baselines/<arch>/0001_kernelgate.json (traces from its traces/)")
    rep.add_argument("current", help="e.g. .kernelgate/results/<arch>/0001_kernelgate.json")
    rep.add_argument("--out", default=".kernelgate/report", help="report folder (default .kernelgate/report)")
    rep.add_argument(
        "--config", default="pyproject.toml", help="thresholds from this file's [tool.kernelgate]"
    )
    rep.add_argument(
        "--traces", help="the current run's --kernelgate-out folder (e.g. .kernelgate), for traces"
    )
    rep.add_argument("--history", metavar="DIR", help="older baseline files (*.json) for the history plot")
    rep.add_argument("--redact", action="store_true", help="hash layer and kernel names in every file")
    rep.set_defaults(run=_report)
    grp = sub.add_parser(
        "groups",
        help="one table of result files: time per layer group (backbone, neck, head, preprocess, NMS), "
        "wall, GPU busy and host overhead per benchmark",
    )
    grp.add_argument("results", nargs="+", help="e.g. .kernelgate/results/<arch>/0001_kernelgate.json")
    grp.add_argument(
        "--format", choices=["text", "md", "csv"], default="text", help="text (default), md or csv"
    )
    grp.add_argument(
        "--infer",
        action="store_true",
        help="records without layer groups (older kernelgate): take them from the Ultralytics model "
        "the benchmark id names (yolov8n-fp16-bs1-640 -> yolov8n.yaml; needs ultralytics)",
    )
    grp.set_defaults(run=_groups)
    rpl = sub.add_parser(
        "replay",
        help="decide the same-host judge's kernel suspects again from a run's samehost-records.json.xz, "
        "by this kernelgate's rule (exit 1 if one is a regression or a doubt)",
    )
    rpl.add_argument("records", nargs="+", help="e.g. .kernelgate/samehost-records.json.xz")
    rpl.add_argument("--config", default="pyproject.toml", help="the [tool.kernelgate] the judge reads")
    rpl.set_defaults(run=_replay)
    cli_baseline.add(sub)
    history_command.add_parsers(sub)
    args = parser.parse_args(given)
    if getattr(args, "rounds", 1) < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    return exits.guarded(args.command, given, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """A command; a configuration or a result file it cannot use is bad input (exit 2, one line)."""
    try:
        return int(args.run(args))
    except (config.ConfigError, BaselineError) as exc:
        raise exits.InputError(str(exc)) from exc


if __name__ == "__main__":
    sys.exit(main())
