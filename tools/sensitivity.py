"""How sensitive and how trustworthy is the gate? A benchmark of the gate itself (not a test).

  all in one (GPU): python tools/sensitivity.py run --work DIR --out docs/sensitivity-table.md
  collect (GPU):    python tools/sensitivity.py collect --work DIR --rounds 3 --trials 20
  evaluate (any):   python tools/sensitivity.py evaluate --work DIR --out docs/sensitivity-table.md
  across hosts:     collect --rounds 3 --trials 0 on host A (WORK_A), collect --rounds 0 --trials 8 on
                    host B (WORK_B), then evaluate --work WORK_B --baseline-from WORK_A --out TABLE

``collect`` records a baseline of the default suite in ``--rounds`` separate processes, then runs
``--trials`` more processes. Each trial measures every configuration unchanged (A/A) and, on
yolov8n fp16, the same model with controlled slowdowns: a spin kernel (``torch.cuda._sleep``)
sized as a fraction of one layer's time, one of the total, and a real change (a leaf conv run
twice). ``evaluate`` replays the gate's verdict offline for several threshold settings, with the
confirm step taken from the next trial (a fresh process), and writes a Markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.config import GateConfig, Scope
from kernelgate.measure.results import Measurement, combine
from kernelgate.verdict import hostspeed, reported, samehost, structure
from kernelgate.verdict.compare import Comparison, compare, confirmed

CONFIGS = [("yolov8n", "fp16"), ("yolov8n", "fp32"), ("yolo11n", "fp16"), ("yolo11n", "fp32")]
TARGET = "yolov8n-fp16-bs1-640"
LAYERS = ("model.1", "model.2", "model.22")  # 30, 93 and 275 µs in the H200 baseline
SIZES = (0.01, 0.03, 0.05)
TOTAL_SIZE = 0.01
TOTAL_LAYER = "model.22"
REAL_MODULE = "model.2.m.0.cv1.conv"


# --- collect (GPU) ----------------------------------------------------------------------------


class Injector:
    """Per-module extra work, switchable between measurements: a spin kernel or a second forward."""

    def __init__(self, torch: Any, net: Any, modules: list[str]) -> None:
        self.torch = torch
        self.cycles: dict[str, int] = {}
        self.rerun: set[str] = set()
        named = dict(net.named_modules())
        for name in modules:
            self._wrap(named[name], name)

    def _wrap(self, module: Any, name: str) -> None:
        original = module.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            if name in self.rerun:
                original(*args, **kwargs)
            out = original(*args, **kwargs)
            if self.cycles.get(name):
                self.torch.cuda._sleep(self.cycles[name])
            return out

        module.forward = forward

    def clear(self) -> None:
        self.cycles.clear()
        self.rerun.clear()


def cycles_per_us(torch: Any) -> float:
    """Spin-kernel cycles per microsecond of GPU time, measured with CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 2_000_000
    torch.cuda._sleep(cycles)
    start.record()
    for _ in range(10):
        torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return float(cycles * 10 / (start.elapsed_time(end) * 1000.0))


def child(kind: str, out: Path) -> None:
    t0 = time.perf_counter()
    import torch

    from kernelgate.measure.execution import Runner, eager
    from kernelgate.measure.pipeline import GPU_SCHEDULE, measure_module
    from kernelgate.models.yolo import YoloSpec, build_yolo, make_input

    imported = time.perf_counter() - t0
    rate = cycles_per_us(torch)
    trace_path = out.with_suffix(".trace.json")
    results: dict[str, Any] = {"import_s": imported, "cycles_per_us": rate, "configs": {}}
    for model, precision in CONFIGS:
        spec = YoloSpec(model, precision, 1, 640)
        start = time.perf_counter()
        net, layers = build_yolo(spec, "cuda")
        is_target = kind == "trial" and spec.id == TARGET
        injector = Injector(torch, net, [*LAYERS, REAL_MODULE]) if is_target else None
        runner = eager(torch, net, make_input(spec, "cuda"), "cuda")

        def measure(runner: Runner = runner, layers: Any = layers, name: str = spec.id) -> Measurement:
            return measure_module(
                torch, runner, layers, bench_id=name, device="cuda", schedule=GPU_SCHEDULE,
                wall_us=[], trace_path=trace_path,
            )  # fmt: skip

        with torch.no_grad():
            for _ in range(3):
                runner.step()
            clean = measure()
            variants: dict[str, Any] = {"clean": clean.to_json()}
            seconds = time.perf_counter() - start
            if injector is not None:
                variants.update(_variants(injector, clean, rate, measure))
        results["configs"][spec.id] = {"seconds": seconds, "variants": variants}
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump(results, fh)


def _variants(
    injector: Injector, clean: Measurement, rate: float, measure: Callable[[], Measurement]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    medians = {lay.name: lay.time.median for lay in clean.layers}
    plans = [(f"{layer} +{size:.0%}", layer, size * medians[layer]) for layer in LAYERS for size in SIZES]
    plans.append(
        (f"total +{TOTAL_SIZE:.0%} (in {TOTAL_LAYER})", TOTAL_LAYER, TOTAL_SIZE * clean.total.median)
    )
    for label, layer, extra_us in plans:
        injector.clear()
        injector.cycles[layer] = max(1, int(extra_us * rate))
        out[label] = measure().to_json()
    injector.clear()
    injector.rerun.add(REAL_MODULE)
    out[f"real: {REAL_MODULE} twice"] = measure().to_json()
    injector.clear()
    return out


def collect(work: Path, rounds: int, trials: int, first: int) -> None:
    work.mkdir(parents=True, exist_ok=True)
    jobs = [("baseline", work / f"baseline-{i}.json.gz") for i in range(rounds)]
    jobs += [("trial", work / f"trial-{i:02d}.json.gz") for i in range(first, first + trials)]
    for kind, path in jobs:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "child", kind, str(path)], check=False)
        print(f"{path.name}: exit {done.returncode} in {time.perf_counter() - start:.1f} s", flush=True)
        if done.returncode != 0:
            raise SystemExit(done.returncode)


# --- evaluate (anywhere) ----------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    label: str
    config: GateConfig


SETTINGS = [
    Setting(
        "layer 10 %, total 5 %, floor 5 µs",
        GateConfig(layer_threshold=0.10, total_threshold=0.05, floor_us=5.0),
    ),
    Setting("layer 3 %, total 1 %", GateConfig(layer_threshold=0.03)),
    Setting("layer 2.5 %, total 1 % (defaults)", GateConfig()),
    Setting("layer 2.5 %, total 0.75 %", GateConfig(total_threshold=0.0075)),
    Setting("layer 2 %, total 0.5 %", GateConfig(layer_threshold=0.02, total_threshold=0.005)),
]


def _load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def verdict(base: Measurement, first: Measurement, again: Measurement, config: GateConfig) -> Comparison:
    """The gate's verdict: compare, and confirm a failure against a measurement from a fresh process."""
    comparison = compare(base, first, config)
    if comparison.failed:
        comparison = confirmed(comparison, compare(base, again, config))
    return comparison


def target_of(variant: str) -> str:
    """What a variant slows down: ``total``, or the layer that must be named."""
    if variant.startswith("total"):
        return "total"
    if variant.startswith("real"):
        return ".".join(REAL_MODULE.split(".")[:2])
    return variant.split(" ")[0]


def _named(comparison: Comparison) -> set[str]:
    return {d.name for d in comparison.failures if d.scope is not Scope.KERNEL} | {
        d.layer for d in comparison.failures if d.scope is Scope.KERNEL
    }


def evaluate(work: Path, out: Path) -> str:
    bases = [_load(p) for p in sorted(work.glob("baseline-*.json.gz"))]
    trials = [_load(p) for p in sorted(work.glob("trial-*.json.gz"))]
    if not bases or len(trials) < 2:
        raise SystemExit(
            f"{work}: need baseline-*.json.gz and at least 2 trial-*.json.gz (run collect first)"
        )
    ids = list(bases[0]["configs"])
    base = {
        i: combine([Measurement.from_json(b["configs"][i]["variants"]["clean"]) for b in bases]) for i in ids
    }

    def m(t: int, cfg: str, variant: str) -> Measurement:
        return Measurement.from_json(trials[t % len(trials)]["configs"][cfg]["variants"][variant])

    variants = [v for v in trials[0]["configs"][TARGET]["variants"] if v != "clean"]
    n = len(trials)
    lines = [
        "| setting | A/A runs with a false failure | " + " | ".join(variants) + " |",
        "|---|---:|" + "---:|" * len(variants),
    ]
    sizes = []
    for variant in variants:
        layer = target_of(variant)
        added = []
        for t in range(n):
            injected, clean = m(t, TARGET, variant), m(t, TARGET, "clean")
            now, was = injected.layer(layer), clean.layer(layer)
            if layer == "total":
                added.append(100 * (injected.total.median / clean.total.median - 1))
            elif now and was:
                added.append(100 * (now.time.median / was.time.median - 1))
        sizes.append(f"{statistics.median(added):+.1f} %")
    for setting in SETTINGS:
        false_runs = sum(
            any(verdict(base[c], m(t, c, "clean"), m(t + 1, c, "clean"), setting.config).failed for c in ids)
            for t in range(n)
        )
        cells = []
        for variant in variants:
            want = target_of(variant)
            hits = 0
            for t in range(n):
                final = verdict(
                    base[TARGET], m(t, TARGET, variant), m(t + 1, TARGET, variant), setting.config
                )
                hits += final.failed and (want in _named(final) or want == "total")
            cells.append(f"{hits}/{n}")
        lines.append(f"| {setting.label} | {false_runs}/{n} | " + " | ".join(cells) + " |")
    lines.append("| measured size of the change (median over trials) | | " + " | ".join(sizes) + " |")
    seconds = [t["configs"][TARGET]["seconds"] for t in trials]
    imports = [t["import_s"] for t in trials]
    env = Measurement.from_json(trials[0]["configs"][TARGET]["variants"]["clean"]).environment
    header = (
        f"Measured with `tools/sensitivity.py` on {env.get('gpu', '?')} "
        f"(driver {env.get('driver', '?')}, torch {env.get('torch', '?')}, cuDNN {env.get('cudnn', '?')}, "
        f"ultralytics {env.get('ultralytics', '?')}): "
        f"baseline of {len(bases)} rounds (processes), {n} trial processes. One configuration took "
        f"{statistics.median(seconds):.1f} s (median; model build, warm-up, profiling of 20 iterations, "
        f"attribution) after torch's import ({statistics.median(imports):.1f} s).\n\n"
    )
    text = header + "\n".join(lines) + "\n"
    out.write_text(text, encoding="utf-8")
    return text


def judged(
    foreign: Measurement, clean: list[Measurement], head: list[Measurement], config: GateConfig
) -> tuple[bool, Comparison | None]:
    """The gate across hosts: the screen against a baseline of another host (structure, or a failure
    at ``screen`` times the thresholds, the host side relative to this runner), then the same-host
    judge on ``clean`` (base) and ``head`` processes of this host. (suspected, the judge's comparison)."""
    first = head[0]
    screen = compare(foreign, first, config)
    here = hostspeed.scaled(foreign, hostspeed.factor(foreign, first))
    suspect = bool(structure.changes(foreign, first)) or compare(here, first, config.screening()).failed
    if not suspect:
        return False, None
    decision = samehost.decide(screen, foreign, clean, head, config, final=True)
    return True, reported.merged(screen, decision) if decision else None


def _host(m: Measurement) -> str:
    found = [h.id for h in m.round_hosts if h is not None]
    return ", ".join(sorted(set(found))) or "?"


def evaluate_across(work: Path, foreign_work: Path, out: Path, per_side: int = 3) -> str:
    """Detection and false failures of the whole gate when the baseline comes from another host: per
    trial window, the screen against ``foreign_work``'s baseline, then the judge on this host's
    processes (clean from every other trial as the base, the change from the ones between)."""
    bases = [_load(p) for p in sorted(foreign_work.glob("baseline-*.json.gz"))]
    trials = [_load(p) for p in sorted(work.glob("trial-*.json.gz"))]
    if not bases or len(trials) < 2 * per_side:
        raise SystemExit(f"need baseline-*.json.gz in {foreign_work} and {2 * per_side} trials in {work}")
    ids = list(bases[0]["configs"])
    foreign = {
        i: combine([Measurement.from_json(b["configs"][i]["variants"]["clean"]) for b in bases]) for i in ids
    }

    def m(t: int, cfg: str, variant: str) -> Measurement:
        return Measurement.from_json(trials[t % len(trials)]["configs"][cfg]["variants"][variant])

    def sides(t: int, cfg: str, variant: str) -> tuple[list[Measurement], list[Measurement]]:
        base = [m(t + 2 * k, cfg, "clean") for k in range(per_side)]
        return base, [m(t + 2 * k + 1, cfg, variant) for k in range(per_side)]

    variants = [v for v in trials[0]["configs"][TARGET]["variants"] if v != "clean"]
    n, config = len(trials), GateConfig()
    suspected = failed = 0
    for t in range(n):
        for c in ids:
            hit, final = judged(foreign[c], *sides(t, c, "clean"), config)
            suspected += hit
            failed += bool(final and final.failed)
    cells = []
    for variant in variants:
        want, hits, seen = target_of(variant), 0, 0
        for t in range(n):
            hit, final = judged(foreign[TARGET], *sides(t, TARGET, variant), config)
            seen += hit
            hits += bool(final and final.failed and (want in _named(final) or want == "total"))
        cells.append(f"{hits}/{n} ({seen} suspected)")
    env = Measurement.from_json(trials[0]["configs"][TARGET]["variants"]["clean"]).environment
    host = [_host(foreign[TARGET]), _host(m(0, TARGET, "clean"))]
    lines = [
        f"Across hosts, measured with `tools/sensitivity.py` on {env.get('gpu', '?')} (torch "
        f"{env.get('torch', '?')}, cuDNN {env.get('cudnn', '?')}): baseline of {len(bases)} rounds on host "
        f"{host[0]}, {n} trial processes on host {host[1]}; each window: the screen against that baseline, "
        f"then the judge on {per_side} processes a side of this host (defaults).\n",
        "| A/A configuration-windows suspected / failed | " + " | ".join(variants) + " |",
        "|---|" + "---:|" * len(variants),
        f"| {suspected}/{n * len(ids)} / {failed}/{n * len(ids)} | " + " | ".join(cells) + " |",
    ]
    text = "\n".join(lines) + "\n"
    out.write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--work", type=Path, required=True)
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--trials", type=int, default=20)
    c.add_argument("--first", type=int, default=0, help="number of the first trial (to split a run)")
    r = sub.add_parser("run", help="collect, then evaluate")
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--trials", type=int, default=20)
    e = sub.add_parser("evaluate")
    e.add_argument("--work", type=Path, required=True)
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--baseline-from", type=Path, help="a work folder of another host: the gate across hosts")
    ch = sub.add_parser("child")
    ch.add_argument("kind", choices=["baseline", "trial"])
    ch.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        collect(args.work, args.rounds, args.trials, 0)
        print(evaluate(args.work, args.out))
    elif args.command == "collect":
        collect(args.work, args.rounds, args.trials, args.first)
    elif args.command == "evaluate" and args.baseline_from:
        print(evaluate_across(args.work, args.baseline_from, args.out))
    elif args.command == "evaluate":
        print(evaluate(args.work, args.out))
    else:
        child(args.kind, args.out)


if __name__ == "__main__":
    main()
