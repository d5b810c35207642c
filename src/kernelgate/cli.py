"""The ``kernelgate`` command: the architecture key, and offline comparison of result files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kernelgate import baseline, config
from kernelgate.compare import compare
from kernelgate.environment import detect_arch_key
from kernelgate.report import failure_message, layer_table


def _arch(args: argparse.Namespace) -> int:
    key = detect_arch_key(force_cpu=args.cpu)
    print(Path(args.baseline_dir) / key / baseline.FILE_NAME if args.path else key)
    return 0


def _compare(args: argparse.Namespace) -> int:
    gate, _ = config.load_pyproject(Path(args.config))
    try:
        base = baseline.load(Path(args.baseline))
        current = baseline.load(Path(args.current))
    except baseline.BaselineError as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    failed = False
    for fullname, entry in current.items():
        if fullname not in base:
            print(f"{entry.measurement.benchmark}: no baseline entry in {args.baseline}")
            continue
        comparison = compare(base[fullname].measurement, entry.measurement, gate)
        types = {lay.name: lay.type for lay in entry.measurement.layers}
        if args.all:
            print(layer_table(comparison, types))
        if comparison.failed:
            failed = True
            print(failure_message(comparison, types, args.baseline))
        else:
            print(f"{comparison.benchmark}: pass")
    return 1 if failed else 0


def _report(args: argparse.Namespace) -> int:
    from kernelgate import publish, trace_store

    gate, _ = config.load_pyproject(Path(args.config))
    base_path, current_path = Path(args.baseline), Path(args.current)
    try:
        base = baseline.load(base_path)
        current = baseline.load(current_path)
    except baseline.BaselineError as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    history, notes = publish.load_history(Path(args.history) if args.history else None, current)
    items = []
    for fullname, entry in current.items():
        m = entry.measurement
        if fullname not in base:
            notes.append(f"{m.benchmark}: no baseline entry in {args.baseline}")
            continue
        items.append(
            publish.Item(
                compare(base[fullname].measurement, m, gate),
                base[fullname].measurement,
                m,
                tuple(history.get(fullname, ())),
                trace_store.beside(base_path, m.benchmark),
                trace_store.current_trace(Path(args.traces), fullname) if args.traces else None,
            )
        )
    if not items:
        print(
            f"kernelgate: no benchmark of {args.current} has a baseline in {args.baseline}", file=sys.stderr
        )
        return 2
    published = publish.publish(items, Path(args.out), redact=args.redact)
    for line in [*published.lines(), *notes]:
        print(line)
    return 1 if published.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernelgate", description=__doc__)
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
    rep = sub.add_parser(
        "report", help="write report.md, report.html, report.json for two result files (exit 1 on regression)"
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
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
