"""The doctor's rules about the host: environment variables known to slow kernels, launches or
loading (and those ``import ultralytics`` sets), the CPU's governor and load, and whether this host
is one of those that recorded its architecture's baseline. Pure functions of
:class:`~kernelgate.machine.facts.Facts`.
"""

from __future__ import annotations

from collections.abc import Mapping

from kernelgate.machine import cpuspeed, threads
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level
from kernelgate.machine.fingerprint import add_runner_command, stranger

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
    slow = cpuspeed.slow_cpus(f.cpu_speeds_ms)
    if slow:
        times = f.cpu_speeds_ms
        fast = [cpu for cpu in times if cpu not in slow]
        found.append(
            Finding(
                Level.WARN,
                "cpu",
                f"the CPUs run at two speeds: the same Python loop took {min(times.values()):.1f} ms on the "
                f"fastest CPU and {min(times[c] for c in slow):.1f} … {max(times.values()):.1f} ms on "
                f"{len(slow)} of {len(times)} (CPUs {_cpus(slow)}; fast: {_cpus(fast)}). The launching "
                "thread's speed then depends on the CPU it runs on at the moment: a launch-bound step "
                "moved up to 2x between processes of the same code on such hosts (lent H100s), "
                "so the same-host judge needs more rounds to settle the host side",
                "a runner whose CPUs are its own (no cores shared with other tenants; on a hybrid CPU, the "
                "performance cores: taskset -c LIST pytest benchmarks); run kernelgate doctor again to see "
                "whether the slow CPUs stay the same",
            )
        )
    if not found:
        load = "?" if f.load_avg is None else f"{f.load_avg:.1f}"
        times = f.cpu_speeds_ms
        speed = (
            f", one speed ({min(times.values()):.1f} … {max(times.values()):.1f} ms a loop)" if times else ""
        )
        found.append(
            Finding(
                Level.OK, "cpu", f"{f.cpu_count} CPUs{speed}, load {load}, governor {f.cpu_governor or 'n/a'}"
            )
        )
    return found


def check_threads(f: Facts) -> list[Finding]:
    """On a host of several GPUs whose jobs get one (or some) each: the torch threads a benchmark
    takes by default (:mod:`kernelgate.machine.threads`: the host's CPUs shared among its GPUs), or a
    warning where ``OMP_NUM_THREADS`` makes a job on each GPU run more threads than the host has CPUs.
    ``threads`` in ``[tool.kernelgate]`` comes first, then ``OMP_NUM_THREADS``."""
    gpus, visible, host = f.gpus_on_host, max(1, f.gpus_visible), f.cpu_count
    share = threads.gpu_share(host, f.cpus_usable or host, gpus, visible)
    if share is None or not f.torch_gpu:
        return []
    each = f.threads_configured or threads.positive(f.variables.get(threads.VARIABLE))
    where = "threads in [tool.kernelgate]" if f.threads_configured else threads.VARIABLE
    fix = f"threads = {share} in [tool.kernelgate]"
    if not f.threads_configured:
        fix += f", or unset {threads.VARIABLE} (kernelgate then takes {share})"
    if each is not None and each * gpus > host:
        return [
            Finding(
                Level.WARN,
                "threads",
                f"{where} = {each} on a host of {gpus} GPUs and {host} CPUs: a job on each GPU runs "
                f"{each * gpus} torch threads on {host} CPUs, whose waiting threads take CPUs the other "
                "jobs launch kernels from (4 jobs of 64 threads on a 64-CPU, 4-GPU H200 host: the "
                "same-host judge's rounds twice as long, 2 of 4 A/A runs red)",
                fix,
            )
        ]
    if each is not None:
        return []
    return [
        Finding(
            Level.INFO,
            "threads",
            f"a benchmark takes {share} torch threads, and each cold-start child OMP_NUM_THREADS={share}: "
            f"the host's {host} CPUs shared among its {gpus} GPUs, {visible} of them this job's",
            "threads = N in [tool.kernelgate] for another count (the baseline's is recorded with it)",
        )
    ]


def check_hosts(f: Facts) -> list[Finding]:
    """Is this runner one of the hosts that recorded the baseline of its architecture? Not one: the
    stored-baseline screen compares across hosts (a warning, and the command that adds it)."""
    recorded = f.baseline_hosts
    if f.identity is None or recorded is None:
        return []  # no GPU, or no baseline: check_gpu and check_baseline say so
    where = f"{f.baseline_dir}/{f.key}/"
    add = (
        f"to add this runner: {add_runner_command()} (two rounds of its own: the screen then compares with "
        "them, cold starts included)"
    )
    if not recorded.hosts:
        return [
            Finding(
                Level.INFO,
                "host",
                f"no round of {where} says which host recorded it (recorded before kernelgate kept host "
                f"fingerprints): whether this runner ({f.host.short()}) is one of them is not known",
                f"rounds recorded from now on carry their host; {add}",
            )
        ]
    text = stranger(f.host, recorded, where)
    if text is not None:
        return [Finding(Level.WARN, "host", text, add)]
    return [
        Finding(
            Level.OK,
            "host",
            f"this runner ({f.host.short()}) is one of the {len(recorded.hosts)} host(s) that "
            f"recorded {where}",
        )
    ]


def _cpus(cpus: list[int], shown: int = 8) -> str:
    listed = ", ".join(str(c) for c in sorted(cpus)[:shown])
    return listed + (f" and {len(cpus) - shown} more" if len(cpus) > shown else "")
