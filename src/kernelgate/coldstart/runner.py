"""The parent's side of a cold start: spawn the children of a scenario, read their result lines, measure.

Each child gets its cache folders from its scenario (``CUDA_CACHE_PATH``, ``TORCHINDUCTOR_CACHE_DIR``
and ``TRITON_CACHE_DIR`` in one temporary folder: ``cuda/``, ``inductor/``, ``triton/``), and
``CUDA_FORCE_PTX_JIT`` or ``CUDA_CACHE_MAXSIZE`` where the scenario sets them; everything else is
inherited from the caller's environment, which is what is under test (a CI runner that sets
``CUDA_CACHE_DISABLE=1`` or ``CUDA_MODULE_LOADING=EAGER`` shows up here). The PTX probe's PTX is built
here, once, before the children (:meth:`Runner.prepare`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernelgate.coldstart.child import CHILD_CODE, MARK
from kernelgate.coldstart.phases import ChildSpec, ColdStart, Run, explain
from kernelgate.coldstart.ptxprobe import build as ptxbuild
from kernelgate.coldstart.scenarios import Scenario
from kernelgate.machine.compile_cache import scenario_env
from kernelgate.machine.jit_cache import folder_bytes


class Runner:
    """Runs the children of one scenario in folders below ``workdir``; keeps the timed runs."""

    def __init__(
        self,
        spec: ChildSpec,
        scenario: Scenario,
        workdir: Path,
        extra_env: Mapping[str, str] | None = None,
        timeout_s: float = 600.0,
        command: Sequence[str] = (sys.executable, "-c", CHILD_CODE),
        cache_dir: Path | None = None,
        unset: Sequence[str] = (),
    ) -> None:
        self.spec = spec
        # variables of the caller's environment the children start without (one a library set in the
        # caller since the run began: `import ultralytics` sets OMP_NUM_THREADS=1)
        self.unset = tuple(unset)
        self.scenario = scenario
        self.workdir = workdir
        self.extra_env = dict(extra_env or {})
        self.timeout_s = timeout_s
        self.command = tuple(command)
        # a warm scenario's primed folder: given (kept afterwards, e.g. a CI's persisted cache) or
        # the workdir's
        self.primed = cache_dir if cache_dir is not None else workdir / "cache"
        self.ptx: ptxbuild.Built | None = None
        self.runs: list[Run] = []
        self._reports: list[dict[str, Any]] = []

    @property
    def env(self) -> dict[str, str]:
        """What this scenario sets on top of the caller's environment (recorded with the results)."""
        forced = {"CUDA_FORCE_PTX_JIT": "1"} if self.scenario.force_ptx else {}
        return forced | dict(self.scenario.env) | self.extra_env

    def prepare(self, capability: tuple[int, int] | None = None, nvcc: str | None = None) -> None:
        """Build what the children need before the first one starts: the PTX probe's PTX (raises
        :class:`~kernelgate.coldstart.ptxprobe.build.ProbeUnavailable` with the reason where it cannot
        run here, :class:`~kernelgate.coldstart.ptxprobe.build.ProbeBuildError` where nvcc fails)."""
        if not self.spec.is_probe or self.ptx is not None:
            return
        capability = capability or ptxbuild.gpu_capability()
        nvcc = nvcc or ptxbuild.find_nvcc()
        reason = ptxbuild.unavailable(self.spec.device, capability, nvcc)
        if reason or capability is None or nvcc is None:
            raise ptxbuild.ProbeUnavailable(reason or "no GPU or no nvcc")
        self.ptx = ptxbuild.build(self.spec.probe_kernels, self.workdir / "ptxprobe", capability, nvcc)

    def _cache_dir(self, priming: bool) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.scenario.warm_cache:
            return Path(tempfile.mkdtemp(prefix="cache-", dir=self.workdir))
        self.primed.mkdir(parents=True, exist_ok=True)
        if priming or not self.scenario.copy_primed:
            return self.primed
        copy = Path(tempfile.mkdtemp(prefix="cache-", dir=self.workdir))
        shutil.copytree(self.primed, copy, dirs_exist_ok=True, symlinks=True)
        return copy

    def _environ(self, cache: Path) -> dict[str, str]:
        environ = dict(os.environ)
        environ.pop("CUDA_FORCE_PTX_JIT", None)
        environ.setdefault("YOLO_OFFLINE", "1")
        (cache / "cuda").mkdir(parents=True, exist_ok=True)
        environ["CUDA_CACHE_PATH"] = str(cache / "cuda")
        environ |= scenario_env(cache)
        for name in self.unset:
            environ.pop(name, None)
        return environ | self.env

    def spec_for(self, priming: bool) -> ChildSpec:
        """The spec a child builds: the timed runs of a scenario that changes compile options
        compile with them on top of the spec's own."""
        if priming or not self.scenario.changed_options:
            return self.spec
        options = self.spec.options | self.scenario.options
        return dataclasses.replace(self.spec, compile_options=json.dumps(options, sort_keys=True))

    def prime(self) -> Run:
        """The untimed priming run: fills a warm scenario's caches and the OS file cache."""
        return self.spawn(priming=True)

    def spawn(self, priming: bool = False) -> Run:
        """One child process; its run is returned (failures as a run with ``error``), not kept."""
        cache = self._cache_dir(priming)
        spawned = time.time()
        start = time.perf_counter()
        payload: dict[str, Any] = {"spec": asdict(self.spec_for(priming)), "spawned": spawned}
        if self.ptx is not None:
            payload["ptx"] = str(self.ptx.path)
        argument = json.dumps(payload)
        try:
            done = subprocess.run(
                [*self.command, argument],
                # not the caller's folder: `python -c` looks up every import there first, and a
                # checkout on a slow file system would slow `import torch` of one side of an A/B
                cwd=self.workdir,
                env=self._environ(cache),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            elapsed = 1000.0 * (time.perf_counter() - start)
            jit = folder_bytes(cache / "cuda")
            return Run({}, elapsed, jit, error=f"timed out after {self.timeout_s:g} s")
        elapsed = 1000.0 * (time.perf_counter() - start)
        return self._parse(done, elapsed, folder_bytes(cache / "cuda"))

    def _parse(self, done: subprocess.CompletedProcess[str], elapsed: float, cache_bytes: int) -> Run:
        lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
        if not lines:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return Run(
                {}, elapsed, cache_bytes, error=f"child exited {done.returncode} without a result: {tail}"
            )
        report = json.loads(lines[-1][len(MARK) :])
        self._reports.append(report)
        return Run(
            phases_ms=report.get("phases_ms", {}),
            process_ms=elapsed,
            cache_bytes=cache_bytes,
            steady_ms=report.get("steady_ms"),
            steady_after=report.get("steady_after"),
            error=None if report.get("ok") else report.get("error", "unknown error"),
            failed_phase=report.get("failed_phase"),
            details=report.get("details") or {},
        )

    def run(self) -> Run:
        """One timed run, kept."""
        result = self.spawn()
        self.runs.append(result)
        return result

    def run_or_raise(self) -> None:
        """One timed run; a failed child raises :class:`ColdStartError` (pytest-benchmark's target)."""
        result = self.run()
        if not result.ok:
            raise ColdStartError(f"{self.spec.id} {self.scenario.name}: {result.failure}")

    def record(self, fallback_arch: str = "unknown") -> ColdStart:
        last: dict[str, Any] = next((r for r in reversed(self._reports) if r.get("ok")), {})
        return ColdStart(
            spec=self.spec,
            scenario=self.scenario.name,
            arch=str(last.get("arch", fallback_arch)),
            env=self.env,
            runs=tuple(self.runs),
            environment=dict(last.get("environment", {})),
        )


class ColdStartError(RuntimeError):
    """A cold-start child failed; the message names the phase and the child's error."""


def measure(
    spec: ChildSpec,
    scenario: Scenario,
    runs: int,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    prime: bool = True,
    fallback_arch: str = "unknown",
    progress: Callable[[str], None] | None = None,
    cache_dir: Path | None = None,
) -> ColdStart:
    """``runs`` cold starts of ``scenario``, after one untimed priming run (which fills the caches
    of a warm scenario and the OS file cache of every scenario). Stops at the first failed run.
    ``cache_dir``: a warm scenario's caches in that folder (kept), not in a temporary one."""
    with tempfile.TemporaryDirectory(prefix="kernelgate-coldstart-") as work:
        runner = Runner(spec, scenario, Path(work), extra_env, timeout_s, cache_dir=cache_dir)
        try:
            runner.prepare()
        except (ptxbuild.ProbeUnavailable, ptxbuild.ProbeBuildError) as exc:
            runner.runs.append(Run({}, 0.0, 0, error=str(exc), failed_phase="prepare"))
            if progress:
                progress(f"{scenario.name}: not run: {exc}")
            return runner.record(fallback_arch)
        if progress and runner.ptx is not None:
            built = runner.ptx
            progress(
                f"{scenario.name}: built {built.path.name} ({built.bytes} B of PTX), {built.seconds:.1f} s: "
                + " ".join(built.command)
            )
        if prime:
            first = runner.prime()
            if progress:
                progress(f"{scenario.name}: priming run {_summary(first)}")
            if not first.ok:
                runner.runs.append(first)
                return runner.record(fallback_arch)
        for i in range(runs):
            result = runner.run()
            if progress:
                progress(f"{scenario.name}: run {i + 1}/{runs} {_summary(result)}")
            if not result.ok:
                break
        return runner.record(fallback_arch)


def _summary(run: Run) -> str:
    if not run.ok:
        return f"failed {run.failure}"
    words = explain(run.details)
    text = f"{run.total_ms / 1000.0:.2f} s to steady state, JIT cache {run.cache_bytes} B"
    return f"{text}; {words}" if words else text
