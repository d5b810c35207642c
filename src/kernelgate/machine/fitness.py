"""Is a machine fit to benchmark? The rules of ``kernelgate doctor`` in the order it shows them
(:data:`CHECKS`), :func:`diagnose` and the command's :func:`exit_code`.

Each ``check_*`` (:mod:`~kernelgate.machine.checks_gpu`, :mod:`~kernelgate.machine.checks_software`,
:mod:`~kernelgate.machine.checks_compile`, :mod:`~kernelgate.machine.checks_host`) turns
:class:`~kernelgate.machine.facts.Facts` into findings, each with a level and a fix; nothing here reads
the machine, so every rule is tested on made-up facts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kernelgate.machine.checks_compile import check_compile_caches
from kernelgate.machine.checks_gpu import (
    check_baseline,
    check_clocks,
    check_gpu,
    check_power,
    check_sharing,
    check_temperature,
)
from kernelgate.machine.checks_host import check_cpu, check_hosts, check_threads, check_variables
from kernelgate.machine.checks_software import (
    check_bytecode,
    check_jit_cache,
    check_kernel_images,
    check_module_loading,
    check_torch_settings,
)
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level

CHECKS: Sequence[Callable[[Facts], list[Finding]]] = (
    check_gpu,
    check_baseline,
    check_hosts,
    check_sharing,
    check_clocks,
    check_temperature,
    check_power,
    check_kernel_images,
    check_jit_cache,
    check_compile_caches,
    check_module_loading,
    check_bytecode,
    check_torch_settings,
    check_variables,
    check_threads,
    check_cpu,
)


def diagnose(facts: Facts) -> list[Finding]:
    """Every finding about ``facts``, in check order."""
    return [finding for check in CHECKS for finding in check(facts)]


def exit_code(findings: Sequence[Finding], strict: bool = False) -> int:
    """0: fit to benchmark; 1: an error (or, with ``strict``, a warning) says it is not."""
    worst = max((f.level for f in findings), default=Level.OK)
    return 1 if worst >= (Level.WARN if strict else Level.ERROR) else 0
