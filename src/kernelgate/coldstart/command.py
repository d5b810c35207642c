"""``kernelgate coldstart``: time the cold starts of a model (eager or compiled) or of the PTX probe,
scenario by scenario, in fresh processes; print the phases and what the caches did; gate them against
a baseline or an earlier ``--out`` file (exit 1 on a regression)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernelgate import config, exits
from kernelgate.baseline import store as baseline
from kernelgate.coldstart import phases as coldstart
from kernelgate.coldstart import runner as coldrunner
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.child import SLOW_PHASE_VAR
from kernelgate.coldstart.ptxprobe.build import DEFAULT_KERNELS
from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.machine import envdiff
from kernelgate.machine.identity import detect_arch_key


def default_scenarios(spec: coldstart.ChildSpec) -> str:
    """What runs without ``--scenarios``: the scenarios that say something about this spec."""
    if not spec.device.startswith("cuda"):
        return "empty"
    if spec.is_probe:
        return "empty,warm,small-cache"
    return "empty,warm,changed" if spec.mode == coldstart.COMPILE else "empty,warm,ptx-jit"


def _gate(
    base: coldstart.ColdStart, current: coldstart.ColdStart, gate: config.GateConfig, where: str, target: str
) -> bool:
    """Print the verdict of one cold start; True if it regressed (or failed where the baseline did not)."""
    if current.error and not base.error:
        print(f"kernelgate: cold start {current.id} failed {current.error} (the baseline's runs completed)")
        return True
    if base.error or current.error:
        print(f"{current.id}: not compared: baseline {base.error or 'ok'}; now {current.error or 'ok'}")
        return False
    comparison = coldverdict.compare_scenario(base, current, gate)
    if comparison.failed:
        changes = envdiff.changes(base.environment, current.environment)
        print(coldverdict.scenario_failure(comparison, base, current, where, changes, target=target))
        return True
    print(coldverdict.summary(comparison))
    return False


def spec_of(args: argparse.Namespace, device: str) -> coldstart.ChildSpec:
    options = json.loads(args.compile_options) if args.compile_options else {}
    if not isinstance(options, dict):
        raise exits.InputError(f"--compile-options {args.compile_options!r}: no JSON object")
    probe = args.model == coldstart.PTX_PROBE
    return coldstart.ChildSpec(
        args.model,
        args.precision,
        args.batch,
        args.imgsz,
        device,
        args.iterations,
        args.cudnn_benchmark,
        args.mode,
        json.dumps(options, sort_keys=True) if options else "",
        args.probe_kernels if probe else 0,
    )


def run(args: argparse.Namespace) -> int:
    device = args.device
    if device == "auto":
        device = "cpu" if detect_arch_key().startswith("cpu-") else "cuda"
    spec = spec_of(args, device)
    scenarios = (args.scenarios or default_scenarios(spec)).split(",")
    unknown = [name for name in scenarios if name not in SCENARIOS]
    if unknown:
        print(f"kernelgate coldstart: unknown scenario(s) {unknown}; use {', '.join(SCENARIOS)}")
        return 2
    if spec.mode != coldstart.COMPILE and any(SCENARIOS[n].compile_only for n in scenarios):
        print("kernelgate coldstart: the `changed` scenario changes a compile option: add --mode compile")
        return 2
    extra = dict(pair(text) for text in args.env)
    if args.slow_phase:
        extra[SLOW_PHASE_VAR] = args.slow_phase
    try:
        base = coldverdict.read_records(Path(args.compare)) if args.compare else {}
    except (OSError, ValueError, KeyError, baseline.BaselineError) as exc:
        print(f"kernelgate: cannot read cold-start records from {args.compare}: {exc}", file=sys.stderr)
        return 2
    records: list[coldstart.ColdStart] = []
    for name in scenarios:
        record = coldrunner.measure(
            spec,
            SCENARIOS[name],
            args.runs,
            extra,
            args.timeout,
            prime=not args.no_prime,
            fallback_arch=detect_arch_key(force_cpu=device == "cpu"),
            progress=lambda line: print(f"kernelgate coldstart: {line}", file=sys.stderr, flush=True),
            cache_dir=Path(args.cache_dir).resolve() if args.cache_dir else None,
        )
        records.append(record)
        if args.out:  # after every scenario: a run cut short still leaves what it measured
            document = {coldverdict.EXTRA_KEY: [r.to_json() for r in records]}
            baseline.write_atomic(Path(args.out), json.dumps(document, indent=2) + "\n")
    print(coldverdict.table(records))
    for record in records:
        if record.error:
            print(f"{record.id}: failed {record.error}")
    gate, _ = config.load_pyproject(Path(args.config))
    failed = False
    for record in records:
        if record.id in base:
            failed |= _gate(base[record.id], record, gate, args.compare, f"{config.TESTS}/test_coldstart.py")
        elif args.compare:
            print(f"{record.id}: no baseline record in {args.compare}")
    return 1 if failed else 0


def pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise exits.InputError(f"--env {text!r}: expected KEY=VALUE, e.g. --env CUDA_CACHE_DISABLE=1")
    return key, value


def add_parser(sub: Any) -> None:
    """The ``coldstart`` subcommand of ``kernelgate`` (``sub``: argparse's subparsers)."""
    cold = sub.add_parser(
        "coldstart",
        help="time cold starts in fresh processes, per phase (exit 1 if --compare finds a regression)",
    )
    add = cold.add_argument
    add("--model", default="yolov8n", help=f"a YOLO model, or {coldstart.PTX_PROBE} (the PTX probe)")
    add("--precision", default="fp16", choices=["fp16", "fp32"])
    add("--batch", type=int, default=1)
    add("--imgsz", type=int, default=640)
    add("--device", default="auto", choices=["auto", "cuda", "cpu"])
    add("--mode", default="eager", choices=[coldstart.EAGER, coldstart.COMPILE], help="or torch.compile")
    add("--compile-options", metavar="JSON", help="torch.compile options, e.g. '{\"fx_graph_cache\": false}'")
    add("--probe-kernels", type=int, default=DEFAULT_KERNELS, help=f"PTX probe kernels ({DEFAULT_KERNELS})")
    add("--scenarios", help=f"comma-separated, of {', '.join(SCENARIOS)} (default: by model and mode)")
    add("--runs", type=int, default=3, help="timed runs per scenario (default 3)")
    add("--iterations", type=int, default=50, help="forwards after the first (default 50)")
    add("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    add("--env", action="append", default=[], metavar="KEY=VALUE", help="set for every child")
    add("--slow-phase", metavar="PHASE:SECONDS", help="deliberate fault: sleep in that phase")
    add("--timeout", type=float, default=600.0, help="seconds per child (default 600)")
    add("--no-prime", action="store_true", help="no untimed first run")
    add("--cache-dir", metavar="DIR", help="a warm scenario's caches in DIR (kept), not in a temporary one")
    add("--out", help="write the records (JSON) to this file")
    add("--compare", metavar="FILE", help="gate against a baseline file or a --out file")
    add("--config", default="pyproject.toml", help="thresholds from this [tool.kernelgate]")
    cold.set_defaults(run=run)
