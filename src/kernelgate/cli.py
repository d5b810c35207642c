"""The ``kernelgate`` command: the architecture key, and offline comparison of result files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kernelgate import baseline, config, integrity
from kernelgate.compare import compare
from kernelgate.environment import detect_arch_key
from kernelgate.measure import Measurement
from kernelgate.report import failure_message, layer_table


def _arch(args: argparse.Namespace) -> int:
    key = detect_arch_key(force_cpu=args.cpu)
    print(baseline.path_for(Path(args.baseline_dir), key) if args.path else key)
    return 0


def _compare(args: argparse.Namespace) -> int:
    try:
        gate, _ = config.load_pyproject(Path(args.config))
        base = baseline.load(Path(args.baseline))
        current = baseline.load(Path(args.current))
    except (baseline.BaselineError, config.ConfigError) as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    failed = False
    by_id = {e.measurement.benchmark: e for e in base.values()}
    for fullname, entry in current.items():
        # by pytest node id; else by benchmark id (the same suite run from another tree or folder)
        match = base.get(fullname) or by_id.get(entry.measurement.benchmark)
        if match is None:
            print(f"{entry.measurement.benchmark}: no baseline entry in {args.baseline}")
            continue
        problems = _untrusted(match.measurement, entry.measurement)
        if problems:
            failed = True
            print(f"{entry.measurement.benchmark}: not compared: {'; '.join(problems)}")
            continue
        comparison = compare(match.measurement, entry.measurement, gate)
        types = {lay.name: lay.type for lay in entry.measurement.layers}
        if args.all:
            print(layer_table(comparison, types))
        if comparison.failed:
            failed = True
            print(failure_message(comparison, types, args.baseline))
        else:
            print(f"{comparison.benchmark}: pass")
    return 1 if failed else 0


def _record(args: argparse.Namespace) -> int:
    from kernelgate.ab import record

    return record(args.rounds, args.pytest_args or ["benchmarks"], Path.cwd())


def _ab(args: argparse.Namespace) -> int:
    from kernelgate.ab import run_ab

    work = Path(args.work).resolve()
    files = run_ab(Path.cwd(), args.base, args.rounds, args.pytest_args or ["benchmarks"], work)
    if files is None:
        return 2
    base, head = files
    print(f"kernelgate: A/B {args.base} (base) vs the working tree (head), {args.rounds} rounds each")
    return _compare(
        argparse.Namespace(baseline=str(base), current=str(head), config=args.config, all=args.all)
    )


def _untrusted(base: Measurement, current: Measurement) -> list[str]:
    """Why this pair cannot be compared: another architecture, or a record that cannot be trusted."""
    problems = []
    if base.arch != current.arch:
        problems.append(f"the baseline is of {base.arch}, the current result of {current.arch}")
    for label, m in (("baseline", base), ("current result", current)):
        reasons = list(m.unreliable_reasons) + integrity.check_record(m)
        if reasons:
            problems.append(f"the {label} is unreliable ({'; '.join(reasons)})")
    return problems


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
    rec = sub.add_parser("record", help="record baselines in several rounds (separate pytest processes)")
    rec.add_argument("--rounds", type=int, default=3)
    rec.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: benchmarks)")
    rec.set_defaults(run=_record)
    ab = sub.add_parser(
        "ab", help="A/B a git ref against the working tree on this GPU (exit 1 on regression)"
    )
    ab.add_argument("--base", required=True, help="git ref to compare against, e.g. origin/main or HEAD~1")
    ab.add_argument("--rounds", type=int, default=3, help="rounds per side, alternating (default 3)")
    ab.add_argument("--work", default=".kernelgate/ab", help="scratch folder (default .kernelgate/ab)")
    ab.add_argument("--config", default="pyproject.toml")
    ab.add_argument("--all", action="store_true", help="also print every layer's delta")
    ab.add_argument("pytest_args", nargs="*", help="after --: pytest arguments (default: benchmarks)")
    ab.set_defaults(run=_ab)
    args = parser.parse_args(argv)
    if getattr(args, "rounds", 1) < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
