"""Is a machine fit to benchmark? The rules of ``kernelgate doctor``, as pure functions of the facts.

Each ``check_*`` turns :class:`~kernelgate.machine.facts.Facts` into findings, each with a level and a fix;
nothing here reads the machine, so every rule is tested on made-up facts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kernelgate.machine.facts import Facts
from kernelgate.machine.identity import same_architecture
from kernelgate.machine.state import THROTTLING, clock_event_names

DEFAULT_CACHE_MAXSIZE = 2**30  # CUDA_CACHE_MAXSIZE's default on desktop and server platforms
MAX_CACHE_MAXSIZE = 2**32  # the largest value the driver honours
CACHE_MARGIN = 1.25  # the cache should hold the suite's JIT output with this much room
BUSY_UTILIZATION_PCT = 10
TEMPERATURE_MARGIN_C = 10


class Level(enum.IntEnum):
    OK = 0
    INFO = 1
    WARN = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Finding:
    level: Level
    check: str
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"level": self.level.label, "check": self.check, "message": self.message, "fix": self.fix}


def _mib(n: float | None) -> str:
    if n is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


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
                Level.ERROR,
                "gpu",
                f"no CUDA GPU visible ({why}; torch.cuda.is_available() is {f.torch_gpu}): GPU kernels "
                f"cannot be measured; kernelgate would time CPU ops against baselines/{f.key}/",
                "run on a machine with an NVIDIA GPU and driver (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                "for a CPU-only gate run pytest benchmarks --kernelgate-device=cpu",
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
                f"record one: pytest benchmarks --kernelgate-save (then commit {f.baseline_dir}/{f.key}/), "
                "or compare with the other GPU anyway: pytest benchmarks --kernelgate-allow-other-gpu",
            )
        ]
    return [
        Finding(
            Level.INFO,
            "baseline",
            f"no baseline for {f.key} in {f.baseline_dir}/ yet: the gate fails until one is recorded",
            f"pytest benchmarks --kernelgate-save, then commit {f.baseline_dir}/{f.key}/",
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


def _jit(f: Facts) -> str:
    """``none`` (native code), ``ptx`` (kernels JIT-compiled), ``forced``, ``impossible``, ``unknown``."""
    images = f.images
    if images is None:
        return "unknown"
    forced = f.variables.get("CUDA_FORCE_PTX_JIT") == "1"
    if forced:
        return "forced" if images.usable_ptx else "impossible"
    if images.native or images.compatible_sass:
        return "none"
    return "ptx" if images.usable_ptx else "impossible"


def check_kernel_images(f: Facts) -> list[Finding]:
    images = f.images
    if images is None:
        if f.torch_version and f.identity and not f.torch_cuda:
            return [
                Finding(
                    Level.ERROR,
                    "sass",
                    f"torch {f.torch_version} is a CPU-only build",
                    "install a CUDA build of torch (https://pytorch.org/get-started/locally/)",
                )
            ]
        return []
    listed = " ".join(images.arch_list)
    ptx = ", ".join(images.usable_ptx) or "none"
    found: list[Finding] = []
    if images.native:
        found.append(
            Finding(Level.OK, "sass", f"torch carries native code (SASS) for {images.sm} ({listed})")
        )
    elif images.compatible_sass:
        found.append(
            Finding(
                Level.INFO,
                "sass",
                f"no SASS for {images.sm}, but {images.compatible_sass} SASS runs on it (binary compatible, "
                f"not tuned for it); torch has {listed}",
                f"a torch build with {images.sm} in TORCH_CUDA_ARCH_LIST would be tuned for this GPU",
            )
        )
    elif images.usable_ptx:
        found.append(
            Finding(
                Level.WARN,
                "sass",
                f"torch has no native code for {images.sm} ({listed}): the driver JIT-compiles every "
                f"kernel from PTX ({ptx}) at first use, which takes minutes, and again in each process "
                "whose JIT cache does not hold them",
                f"install a torch build with {images.sm} SASS; until then keep a JIT cache large enough "
                f"(CUDA_CACHE_MAXSIZE={MAX_CACHE_MAXSIZE}) and persistent (CUDA_CACHE_PATH on a kept disk)",
            )
        )
    else:
        found.append(
            Finding(
                Level.ERROR,
                "sass",
                f"torch has neither SASS nor usable PTX for {images.sm} ({listed}): kernels fail with "
                "'no kernel image is available for execution on the device'",
                f"install a torch build that lists {images.sm} (or an earlier compute_XY) in get_arch_list()",
            )
        )
    jit = _jit(f)
    if jit == "forced":
        found.append(
            Finding(
                Level.WARN,
                "force-ptx",
                f"CUDA_FORCE_PTX_JIT=1: native code is ignored, every kernel JIT-compiled from PTX ({ptx})",
                "unset CUDA_FORCE_PTX_JIT unless reproducing a PTX-JIT cold start on purpose",
            )
        )
    elif jit == "impossible" and f.variables.get("CUDA_FORCE_PTX_JIT") == "1":
        found.append(
            Finding(
                Level.ERROR,
                "force-ptx",
                f"CUDA_FORCE_PTX_JIT=1, but torch's PTX ({', '.join(images.ptx) or 'none'}) cannot be "
                f"compiled for {images.sm}: its kernels will fail to load",
                "unset CUDA_FORCE_PTX_JIT",
            )
        )
    elif not images.usable_ptx:
        found.append(
            Finding(
                Level.INFO,
                "force-ptx",
                f"torch carries PTX only for {', '.join(images.ptx) or 'no architecture'}, none usable on "
                f"{images.sm}: CUDA_FORCE_PTX_JIT=1 cannot run it here, so the PTX-JIT cold-start "
                "scenarios are skipped on this GPU",
                "to reproduce a PTX-JIT cold start, use a torch build with PTX for this GPU or an older one",
            )
        )
    return found


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def check_jit_cache(f: Facts) -> list[Finding]:
    jit = _jit(f)
    needed = jit in {"ptx", "forced"}
    v = f.variables
    found: list[Finding] = []
    if v.get("CUDA_CACHE_DISABLE") == "1":
        found.append(
            Finding(
                Level.ERROR if needed else Level.WARN,
                "jit-cache",
                "CUDA_CACHE_DISABLE=1: nothing JIT-compiled is kept, so every process compiles its PTX "
                "kernels again"
                + (
                    " (here: all of torch's kernels, minutes per process)"
                    if needed
                    else "; harmless while torch has native code for this GPU, costly for any PTX-only kernel"
                ),
                "unset CUDA_CACHE_DISABLE",
            )
        )
    raw = v.get("CUDA_CACHE_MAXSIZE")
    size = DEFAULT_CACHE_MAXSIZE if raw is None else _int(raw)
    shown = f"CUDA_CACHE_MAXSIZE={'unset (default 1 GiB)' if raw is None else raw}"
    if size is None:
        found.append(
            Finding(
                Level.WARN,
                "jit-cache",
                f"{shown} is not a number of bytes; the driver ignores it",
                f"export CUDA_CACHE_MAXSIZE={MAX_CACHE_MAXSIZE}",
            )
        )
        size = DEFAULT_CACHE_MAXSIZE
    elif size > MAX_CACHE_MAXSIZE:
        found.append(
            Finding(
                Level.INFO,
                "jit-cache",
                f"{shown} is above the driver's maximum of 4 GiB",
                f"export CUDA_CACHE_MAXSIZE={MAX_CACHE_MAXSIZE}",
            )
        )
        size = MAX_CACHE_MAXSIZE
    need = f.suite_cache_bytes
    if need is not None and need * CACHE_MARGIN > size:
        found.append(
            Finding(
                Level.ERROR if needed else Level.WARN,
                "jit-cache",
                f"{shown} ({_mib(size)}) cannot hold the {_mib(need)} of JIT output the suite's recorded "
                f"cold start left (with {CACHE_MARGIN - 1:.0%} room): kernels get evicted and compiled again",
                f"export CUDA_CACHE_MAXSIZE={MAX_CACHE_MAXSIZE}",
            )
        )
    elif needed and need is None and size < MAX_CACHE_MAXSIZE:
        found.append(
            Finding(
                Level.WARN,
                "jit-cache",
                f"kernels are JIT-compiled here and {shown} ({_mib(size)}); how much the suite needs is not "
                "recorded yet (no PTX-JIT cold start in the baseline)",
                f"export CUDA_CACHE_MAXSIZE={MAX_CACHE_MAXSIZE}, and record the cold start: "
                "pytest benchmarks --kernelgate-save -k coldstart",
            )
        )
    else:
        needs = "unknown" if need is None else _mib(need)
        found.append(Finding(Level.OK, "jit-cache", f"{shown}; the suite's recorded JIT output: {needs}"))
    where = f"CUDA_CACHE_PATH={f.cache_path} holds {_mib(f.cache_bytes or 0)}"
    if f.cache_writable is False:
        found.append(
            Finding(
                Level.ERROR if needed else Level.WARN,
                "jit-cache",
                f"{where} and is not writable",
                "point CUDA_CACHE_PATH at a writable folder on a kept disk",
            )
        )
    elif f.cache_bytes is not None and f.cache_bytes >= 0.9 * size:
        found.append(
            Finding(
                Level.WARN,
                "jit-cache",
                f"{where}: 90 % of its maximum, so it evicts",
                f"export CUDA_CACHE_MAXSIZE={MAX_CACHE_MAXSIZE} or clear {f.cache_path}",
            )
        )
    elif f.cache_free_bytes is not None and need is not None and f.cache_free_bytes < need * CACHE_MARGIN:
        found.append(
            Finding(
                Level.WARN,
                "jit-cache",
                f"{where}; only {_mib(f.cache_free_bytes)} free on its disk",
                "free disk space or move CUDA_CACHE_PATH",
            )
        )
    else:
        found.append(Finding(Level.INFO, "jit-cache", where))
    return found


def check_module_loading(f: Facts) -> list[Finding]:
    mode = f.variables.get("CUDA_MODULE_LOADING")
    if mode is None or mode.upper() == "LAZY":
        how = "unset: the driver default" if mode is None else "LAZY"
        return [Finding(Level.OK, "module-loading", f"CUDA_MODULE_LOADING {how} (kernels load at first use)")]
    if mode.upper() == "EAGER":
        return [
            Finding(
                Level.WARN,
                "module-loading",
                "CUDA_MODULE_LOADING=EAGER: every kernel of torch, cuDNN and cuBLAS loads at CUDA init, "
                "a slower cold start and more GPU memory than the lazy default",
                "unset CUDA_MODULE_LOADING (or set LAZY), as when the baseline was recorded",
            )
        ]
    return [
        Finding(
            Level.WARN,
            "module-loading",
            f"CUDA_MODULE_LOADING={mode} is neither LAZY nor EAGER",
            "unset CUDA_MODULE_LOADING",
        )
    ]


def check_torch_settings(f: Facts) -> list[Finding]:
    found: list[Finding] = []
    if f.cudnn_benchmark:
        found.append(
            Finding(
                Level.INFO,
                "cudnn",
                "torch.backends.cudnn.benchmark is True after importing torch and ultralytics: the first "
                "forward of each shape autotunes (longer cold start; the picked kernels may vary by run)",
                "record and compare with the same setting (kernelgate records it as cudnn_benchmark)",
            )
        )
    if f.cudnn_deterministic:
        found.append(
            Finding(
                Level.WARN,
                "cudnn",
                "torch.backends.cudnn.deterministic is True: slower algorithms",
                "leave it False for benchmarks",
            )
        )
    if not found and f.cudnn_benchmark is not None:
        found.append(
            Finding(Level.OK, "cudnn", "cudnn.benchmark and cudnn.deterministic are off (the defaults)")
        )
    return found


# Variables that slow kernels or launches: (level, why, fix).
SLOWING: Mapping[str, tuple[Level, str, str]] = {
    "CUDA_LAUNCH_BLOCKING": (
        Level.ERROR,
        "every kernel launch waits for the GPU",
        "unset CUDA_LAUNCH_BLOCKING",
    ),
    "PYTORCH_NO_CUDA_MEMORY_CACHING": (
        Level.ERROR,
        "every allocation goes to cudaMalloc",
        "unset PYTORCH_NO_CUDA_MEMORY_CACHING",
    ),
    "CUBLAS_WORKSPACE_CONFIG": (
        Level.WARN,
        "restricts cuBLAS to a fixed workspace (deterministic mode), which can pick slower GEMM algorithms; "
        "ultralytics' YOLO() sets ':4096:8' when it builds a model",
        "unset CUBLAS_WORKSPACE_CONFIG and build models without ultralytics.YOLO() in timed processes",
    ),
    "NVIDIA_TF32_OVERRIDE": (
        Level.WARN,
        "overrides TF32 use in cuBLAS/cuDNN (0 disables it: slower fp32)",
        "unset NVIDIA_TF32_OVERRIDE",
    ),
    "TORCH_USE_CUDA_DSA": (
        Level.WARN,
        "device-side assertions add checks to kernels",
        "unset TORCH_USE_CUDA_DSA",
    ),
    "CUDA_DISABLE_PTX_JIT": (
        Level.INFO,
        "PTX-only kernels fail instead of being JIT-compiled",
        "unset CUDA_DISABLE_PTX_JIT unless testing for native code on purpose",
    ),
    "KERNELGATE_SLOW_PHASE": (
        Level.WARN,
        "kernelgate's deliberate cold-start fault is on",
        "unset KERNELGATE_SLOW_PHASE",
    ),
}
NOTED = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "OMP_NUM_THREADS",
    "PYTORCH_CUDA_ALLOC_CONF",
    "TORCH_CUDNN_V8_API_DISABLED",
)


def check_variables(f: Facts) -> list[Finding]:
    found: list[Finding] = []
    for name, (level, why, fix) in SLOWING.items():
        value = f.variables.get(name, f.set_by_import.get(name))
        if value is None or (name == "CUDA_LAUNCH_BLOCKING" and value == "0"):
            continue
        source = " (set by `import ultralytics`)" if name in f.set_by_import else ""
        found.append(Finding(level, "env", f"{name}={value}{source}: {why}", fix))
    for name in set(f.set_by_import) - set(SLOWING):
        found.append(
            Finding(
                Level.INFO,
                "env",
                f"`import ultralytics` set {name}={f.set_by_import[name]}",
                "record and compare with the same setting",
            )
        )
    noted = [f"{n}={f.variables[n]}" for n in NOTED if n in f.variables]
    if noted:
        found.append(
            Finding(
                Level.INFO,
                "env",
                "set and recorded with every result: " + ", ".join(noted),
                "keep them the same for baseline and runs",
            )
        )
    if not found:
        found.append(
            Finding(Level.OK, "env", "no variable known to slow kernels, launches or loading is set")
        )
    return found


def check_cpu(f: Facts) -> list[Finding]:
    found: list[Finding] = []
    if f.cpu_governor and f.cpu_governor != "performance":
        found.append(
            Finding(
                Level.WARN,
                "cpu",
                f"CPU frequency governor '{f.cpu_governor}': batch-1 YOLO inference is launch-bound (the GPU "
                "is busy 17-30 % of the wall time on an H200), so host clocks move wall time",
                "an administrator: cpupower frequency-set -g performance",
            )
        )
    if f.load_avg is not None and f.load_avg > 0.5 * f.cpu_count:
        found.append(
            Finding(
                Level.WARN,
                "cpu",
                f"load average {f.load_avg:.1f} on {f.cpu_count} CPUs: other work competes with the "
                "launching thread and with cold-start imports",
                "benchmark on a quiet machine (one job per GPU runner)",
            )
        )
    if not found:
        load = "?" if f.load_avg is None else f"{f.load_avg:.1f}"
        found.append(
            Finding(Level.OK, "cpu", f"{f.cpu_count} CPUs, load {load}, governor {f.cpu_governor or 'n/a'}")
        )
    return found


CHECKS: Sequence[Callable[[Facts], list[Finding]]] = (
    check_gpu,
    check_baseline,
    check_sharing,
    check_clocks,
    check_temperature,
    check_power,
    check_kernel_images,
    check_jit_cache,
    check_module_loading,
    check_torch_settings,
    check_variables,
    check_cpu,
)


def diagnose(facts: Facts) -> list[Finding]:
    """Every finding about ``facts``, in check order."""
    return [finding for check in CHECKS for finding in check(facts)]


def exit_code(findings: Sequence[Finding], strict: bool = False) -> int:
    """0: fit to benchmark; 1: an error (or, with ``strict``, a warning) says it is not."""
    worst = max((f.level for f in findings), default=Level.OK)
    return 1 if worst >= (Level.WARN if strict else Level.ERROR) else 0
