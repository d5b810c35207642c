"""``kernelgate doctor``: is this machine fit to benchmark?

:func:`gather` reads the facts (NVML, torch, the environment, the CUDA JIT cache folder, torch.compile's
cache folders, the CPU);
:func:`kernelgate.machine.fitness.diagnose` turns them into findings, each with a level and a fix. Nothing
here changes a GPU setting: the doctor reads state, and a fix that needs one (persistence mode,
clocks) is a command for an administrator.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from kernelgate.machine import bytecode, compile_cache, cpuspeed
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level
from kernelgate.machine.fingerprint import RecordedHosts
from kernelgate.machine.fitness import exit_code
from kernelgate.machine.identity import cpu_arch_key, cpu_model, read_identity
from kernelgate.machine.jit_cache import default_cache_path, folder_bytes
from kernelgate.machine.nvml import nvml_error
from kernelgate.machine.software import SPEED_VARIABLES
from kernelgate.machine.state import read_state
from kernelgate.machine.visible import gpu_counts

# --- gathering ----------------------------------------------------------------------------------


def _variables() -> dict[str, str]:
    return {name: os.environ[name] for name in SPEED_VARIABLES if name in os.environ}


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _governor() -> str | None:
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None


def _cudnn_version(torch: Any) -> str | None:
    cudnn = torch.backends.cudnn
    return str(cudnn.version()) if cudnn.is_available() else None


def gather(
    baseline_dir: Path = Path("baselines"),
    recorded_cache_bytes: Callable[[Path, str], int | None] | None = None,
    recorded_hosts: Callable[[Path, str], RecordedHosts | None] | None = None,
) -> Facts:
    """Read the facts. NVML is read first, before torch loads, so no CUDA context of this process
    shows among the GPU's processes; torch is asked only what needs no CUDA context.

    ``recorded_cache_bytes(baseline_dir, key)`` gives the largest JIT cache a recorded cold start
    left (:func:`kernelgate.coldstart.verdict.recorded_cache_bytes`, which the command passes: the
    baseline format is above this package); without it that size is not known. Likewise
    ``recorded_hosts(baseline_dir, key)``: the hosts that recorded the baseline
    (:func:`kernelgate.baseline.hosts.recorded`).
    """
    error = nvml_error()
    gpus = (0, 0) if error else gpu_counts()
    identity = None if error else read_identity()
    state = None if error else read_state()
    before = _variables()
    facts: dict[str, Any] = {}
    try:
        import torch

        facts.update(
            torch_version=str(torch.__version__),
            torch_cuda=torch.version.cuda,
            torch_gpu=bool(torch.cuda.is_available()),
            arch_list=tuple(torch.cuda.get_arch_list()),
            cudnn_version=_cudnn_version(torch),
        )
    except Exception as exc:
        facts["torch_error"] = f"{type(exc).__name__}: {exc}"
    try:
        os.environ.setdefault("YOLO_OFFLINE", "1")
        import ultralytics  # noqa: F401

        facts["ultralytics"] = metadata.version("ultralytics")
    except Exception:
        facts["ultralytics"] = None
    after = _variables()
    facts["set_by_import"] = {k: v for k, v in after.items() if before.get(k) != v}
    if "torch_version" in facts:
        import torch

        facts["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
        facts["cudnn_deterministic"] = bool(torch.backends.cudnn.deterministic)
    cache = Path(default_cache_path()).expanduser()
    anchor = _existing(cache)
    keys = (
        tuple(sorted(p.name for p in baseline_dir.iterdir() if p.is_dir())) if baseline_dir.is_dir() else ()
    )
    key = identity.key if identity else cpu_arch_key()
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    return Facts(
        nvml_error=error,
        identity=identity,
        state=state,
        own_pid=os.getpid(),
        variables=before,
        cache_path=str(cache),
        cache_bytes=folder_bytes(cache),
        cache_free_bytes=shutil.disk_usage(anchor).free,
        cache_writable=os.access(anchor, os.W_OK),
        suite_cache_bytes=None if recorded_cache_bytes is None else recorded_cache_bytes(baseline_dir, key),
        compile_caches=compile_cache.read_folders(
            os.environ, compile_cache.read_mounts(), compile_cache.in_container()
        ),
        ci=compile_cache.ci_system(os.environ),
        baseline_hosts=None if recorded_hosts is None else recorded_hosts(baseline_dir, key),
        baseline_dir=str(baseline_dir),
        baseline_keys=keys,
        cpu=cpu_model(),
        cpu_count=os.cpu_count() or 1,
        load_avg=load,
        cpu_governor=_governor(),
        cpu_speeds_ms=cpuspeed.probe(),
        cpus_usable=len(os.sched_getaffinity(0)),
        compiles_imports=bytecode.compiles_each_time(os.environ),
        gpus_on_host=gpus[0],
        gpus_visible=gpus[1],
        **facts,
    )


# --- output --------------------------------------------------------------------------------------


def render(facts: Facts, findings: Sequence[Finding], strict: bool = False, width: int = 110) -> str:
    """The findings for people: one block per finding, its fix below it."""
    lines = ["kernelgate doctor: is this machine fit to benchmark?"]
    if facts.torch_version:
        lines.append(
            f"torch {facts.torch_version} (CUDA {facts.torch_cuda}, cuDNN {facts.cudnn_version}), "
            f"ultralytics {facts.ultralytics or 'not installed'}; baseline key {facts.key}"
        )
        lines.append(f"torch kernels for: {' '.join(facts.arch_list) or 'none (CPU-only build)'}")
    elif facts.torch_error:
        lines.append(f"torch cannot be imported: {facts.torch_error}")
    lines.append("")
    indent = " " * 21
    for finding in findings:
        head = f"{finding.level.label:<5} {finding.check:<14} "
        lines += _wrap(finding.message, width, head, indent)
        if finding.fix and finding.level > Level.OK:
            lines += _wrap(finding.fix, width, indent + "fix: ", indent + "     ")
    counts = {level: sum(1 for f in findings if f.level is level) for level in Level}
    code = exit_code(findings, strict)
    verdict = "fit to benchmark" if code == 0 else "NOT fit to benchmark"
    if facts.identity is None and not facts.torch_gpu and code == 0:
        verdict += " in CPU mode (CPU ops, not GPU kernels)"
    lines.append("")
    lines.append(
        f"{verdict}: {counts[Level.ERROR]} error(s), {counts[Level.WARN]} warning(s), "
        f"{counts[Level.INFO]} note(s){' (--strict: warnings count)' if strict else ''}; exit {code}"
    )
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """Wrapped at spaces only, so commands and paths stay whole for copying."""
    return textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )


def to_json(facts: Facts, findings: Sequence[Finding], strict: bool = False) -> str:
    code = exit_code(findings, strict)
    document = {
        "fit": code == 0,
        "exit_code": code,
        "findings": [f.to_json() for f in findings],
        "facts": facts.to_json(),
    }
    return json.dumps(document, indent=2, sort_keys=False, default=str) + "\n"
