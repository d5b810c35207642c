"""The doctor's rules about the GPU: is one visible to NVML and torch, is there a baseline for it, is
it shared, throttled, hot or power-capped. Pure functions of :class:`~kernelgate.machine.facts.Facts`.
"""

from __future__ import annotations

from kernelgate.config import record_command
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level
from kernelgate.machine.identity import same_architecture
from kernelgate.machine.state import THROTTLING, clock_event_names

BUSY_UTILIZATION_PCT = 10
TEMPERATURE_MARGIN_C = 10


def check_gpu(f: Facts) -> list[Finding]:
    if f.identity is None:
        if f.torch_gpu:
            return [
                Finding(
                    Level.WARN,
                    "gpu",
                    f"torch sees a GPU but NVML cannot be read ({f.nvml_error}): clocks, temperature and "
                    "other processes cannot be checked, and the baseline key falls back to the CPU's",
                    "make the NVIDIA driver's libnvidia-ml.so visible to this process (container: "
                    "--gpus / NVIDIA_DRIVER_CAPABILITIES=compute,utility) and pip install nvidia-ml-py",
                )
            ]
        why = f"NVML: {f.nvml_error}" if f.nvml_error else "NVML lists no GPU"
        return [
            Finding(
                Level.WARN,
                "gpu",
                f"CPU mode: no CUDA GPU visible ({why}; torch.cuda.is_available() is {f.torch_gpu}). "
                "Here kernelgate times the outermost aten:: CPU ops of each layer (the matrix's cpu set, "
                f"fp32) against baselines/{f.key}/: a gate for this machine's CPU code path, not for GPU "
                "kernels, CUDA graphs or the CUDA JIT cache",
                "for GPU kernels, run on a machine with an NVIDIA GPU and driver (check nvidia-smi and "
                "CUDA_VISIBLE_DEVICES); on this one, pytest benchmarks --kernelgate-device=cpu; "
                "kernelgate doctor --strict fails here",
            )
        ]
    i = f.identity
    memory = "memory ?" if i.memory_mib is None else f"{i.memory_mib:,} MiB"
    found = [
        Finding(
            Level.OK,
            "gpu",
            f"GPU {i.index}: {i.name} ({i.architecture}, {i.sm}, {memory}), "
            f"driver {i.driver}, CUDA driver {i.cuda_driver}; baseline key {i.key}",
        )
    ]
    if f.torch_version and not f.torch_gpu:
        found.append(
            Finding(
                Level.ERROR,
                "gpu",
                f"NVML sees {i.name} but torch {f.torch_version} does not "
                f"(torch.version.cuda = {f.torch_cuda}): the benchmarks would run on the CPU",
                "install a CUDA build of torch that this driver supports (CUDA driver "
                f"{i.cuda_driver}), e.g. pip install torch --index-url https://download.pytorch.org/whl/cu130",
            )
        )
    return found


def check_baseline(f: Facts) -> list[Finding]:
    if f.identity is None:
        return []
    if f.key in f.baseline_keys:
        return [Finding(Level.OK, "baseline", f"{f.baseline_dir}/{f.key}/ exists for this GPU")]
    others = same_architecture(f.key, f.baseline_keys)
    if others:
        return [
            Finding(
                Level.WARN,
                "baseline",
                f"no baseline for {f.key}; {', '.join(others)} is the same architecture but another GPU, "
                "and the gate refuses its timings by default",
                f"record one: {record_command()} (then commit {f.baseline_dir}/{f.key}/), "
                "or compare with the other GPU anyway: pytest benchmarks --kernelgate-allow-other-gpu",
            )
        ]
    return [
        Finding(
            Level.INFO,
            "baseline",
            f"no baseline for {f.key} in {f.baseline_dir}/ yet: the gate fails until one is recorded",
            f"{record_command()}, then commit {f.baseline_dir}/{f.key}/",
        )
    ]


def check_sharing(f: Facts) -> list[Finding]:
    s = f.state
    if f.identity is None or s is None:
        return []
    found: list[Finding] = []
    others = [p for p in (s.processes or ()) if p.pid != f.own_pid]
    if others:
        listed = ", ".join(
            f"pid {p.pid} ({'?' if p.used_mib is None else f'{p.used_mib:,.0f} MiB'})" for p in others
        )
        found.append(
            Finding(
                Level.ERROR,
                "processes",
                f"{len(others)} other compute process(es) on this GPU: {listed}; they share its SMs and "
                "memory bandwidth, so timings are not this code's alone",
                "wait until they end (nvidia-smi), or pick an idle GPU with CUDA_VISIBLE_DEVICES",
            )
        )
    elif s.processes is not None:
        found.append(Finding(Level.OK, "processes", "no other compute process on this GPU"))
    if not others and s.utilization_pct is not None and s.utilization_pct >= BUSY_UTILIZATION_PCT:
        found.append(
            Finding(
                Level.WARN,
                "utilization",
                f"the GPU is {s.utilization_pct} % busy although no process of this machine's view uses it: "
                "another container or VM may share it",
                "check nvidia-smi on the host; benchmark on a GPU that is not shared",
            )
        )
    if s.mig_enabled:
        found.append(
            Finding(
                Level.WARN,
                "mig",
                "MIG is enabled: this is a slice of the GPU, with a fraction of its SMs and bandwidth",
                "record and compare baselines on the same MIG profile only, or benchmark on a whole GPU",
            )
        )
    if s.compute_mode == "prohibited":
        found.append(
            Finding(
                Level.ERROR,
                "compute-mode",
                "the GPU's compute mode is Prohibited: no CUDA context can be created",
                "an administrator: nvidia-smi -c DEFAULT",
            )
        )
    return found


def check_clocks(f: Facts) -> list[Finding]:
    s, i = f.state, f.identity
    if i is None or s is None or s.clock_event_reasons is None:
        return []
    names = clock_event_names(s.clock_event_reasons)
    clocks = f"SM clock {s.sm_clock_mhz} of {i.sm_clock_max_mhz} MHz, memory clock {s.mem_clock_mhz} MHz"
    throttled = [n for n in names if n in THROTTLING]
    if throttled:
        return [
            Finding(
                Level.ERROR,
                "clocks",
                f"the GPU is throttled now ({', '.join(throttled)}); {clocks}",
                "let it cool down and check cooling, power delivery and nvidia-smi -q -d PERFORMANCE "
                "before benchmarking",
            )
        ]
    if "sw_power_cap" in names:
        return [
            Finding(
                Level.WARN,
                "clocks",
                f"clocks held down by the software power cap; {clocks}",
                "check the power limit (nvidia-smi -q -d POWER); timings under a power cap vary with load",
            )
        ]
    notes = [n for n in names if n != "gpu_idle"]
    if notes:
        return [
            Finding(
                Level.INFO,
                "clocks",
                f"clock setting active: {', '.join(notes)}; {clocks}",
                "record and compare baselines under the same clock settings",
            )
        ]
    state = "idle" if "gpu_idle" in names else "no clock-event reason set"
    return [Finding(Level.OK, "clocks", f"{state}, not throttled; {clocks}")]


def check_temperature(f: Facts) -> list[Finding]:
    s = f.state
    if f.identity is None or s is None or s.temperature_c is None:
        return []
    limit = s.slowdown_temperature_c
    if limit is None:
        level = Level.WARN if s.temperature_c >= 85 else Level.OK
        return [
            Finding(
                level,
                "temperature",
                f"{s.temperature_c} °C (slowdown threshold unknown)",
                "let the GPU cool down" if level else "",
            )
        ]
    if s.temperature_c >= limit:
        level, fix = Level.ERROR, "let the GPU cool down; check its cooling"
    elif s.temperature_c >= limit - TEMPERATURE_MARGIN_C:
        level, fix = Level.WARN, "let the GPU cool down before benchmarking; a long run will throttle"
    else:
        level, fix = Level.OK, ""
    return [Finding(level, "temperature", f"{s.temperature_c} °C, slowdown at {limit} °C", fix)]


def check_power(f: Facts) -> list[Finding]:
    i, s = f.identity, f.state
    if i is None or i.power_limit_w is None:
        return []
    found: list[Finding] = []
    if i.power_default_w and i.power_limit_w < 0.99 * i.power_default_w:
        found.append(
            Finding(
                Level.WARN,
                "power",
                f"power limit {i.power_limit_w:g} W, below the default {i.power_default_w:g} W: the GPU "
                "clocks lower under load than a GPU at its default limit",
                "record baselines at the same limit, or an administrator restores it: "
                f"nvidia-smi -pl {i.power_default_w:g}",
            )
        )
    else:
        found.append(Finding(Level.OK, "power", f"power limit {i.power_limit_w:g} W (default)"))
    if s is not None and s.persistence_mode is False:
        found.append(
            Finding(
                Level.INFO,
                "persistence",
                "persistence mode is off: the driver may tear the GPU down between processes, and every "
                "cold start then includes driver initialisation",
                "an administrator: nvidia-smi -pm 1 (or run nvidia-persistenced); keep it the same for "
                "baseline and runs",
            )
        )
    return found
