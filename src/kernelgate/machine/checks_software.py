"""The doctor's rules about the CUDA software: does torch carry native code or only PTX for this GPU,
can the JIT cache hold what the suite compiles, how modules load, cuDNN's settings. Pure functions of
:class:`~kernelgate.machine.facts.Facts`.
"""

from __future__ import annotations

from kernelgate.config import TESTS, record_command
from kernelgate.machine import bytecode
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level

DEFAULT_CACHE_MAXSIZE = 2**30  # CUDA_CACHE_MAXSIZE's default on desktop and server platforms
MAX_CACHE_MAXSIZE = 2**32  # the largest value the driver honours
CACHE_MARGIN = 1.25  # the cache should hold the suite's JIT output with this much room


def _mib(n: float | None) -> str:
    if n is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


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
                + record_command(f"{TESTS}/test_coldstart.py"),
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


def check_bytecode(f: Facts) -> list[Finding]:
    """Every process compiling torch's sources: seconds of each cold start, on both sides alike."""
    if not f.compiles_imports:
        return []
    return [
        Finding(
            Level.INFO,
            "bytecode",
            f"{bytecode.NO_WRITE_VAR} is set and torch is installed without bytecode: every Python process "
            "compiles the sources it imports (seconds of each cold start and of each of the judge's "
            "processes, which keep their own bytecode)",
            "compile the installed packages once: python -m compileall -q \"$(python -c 'import sysconfig; "
            'print(sysconfig.get_paths()["purelib"])\')" (uv: --compile-bytecode)',
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
