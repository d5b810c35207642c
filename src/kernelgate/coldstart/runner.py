"""The parent's side of a cold start: spawn the children of a scenario, read their result lines, measure.

Each child gets ``CUDA_CACHE_PATH`` (a temporary folder) and ``CUDA_FORCE_PTX_JIT`` from its scenario;
everything else is inherited from the caller's environment, which is what is under test (a CI
runner that sets ``CUDA_CACHE_DISABLE=1`` or ``CUDA_MODULE_LOADING=EAGER`` shows up here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernelgate.coldstart.child import CHILD_CODE, MARK
from kernelgate.coldstart.phases import ChildSpec, ColdStart, Run
from kernelgate.coldstart.scenarios import Scenario
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
    ) -> None:
        self.spec = spec
        self.scenario = scenario
        self.workdir = workdir
        self.extra_env = dict(extra_env or {})
        self.timeout_s = timeout_s
        self.command = tuple(command)
        self.runs: list[Run] = []
        self._reports: list[dict[str, Any]] = []

    @property
    def env(self) -> dict[str, str]:
        """What this scenario sets on top of the caller's environment (recorded with the results)."""
        return ({"CUDA_FORCE_PTX_JIT": "1"} if self.scenario.force_ptx else {}) | self.extra_env

    def _cache_dir(self) -> Path:
        if self.scenario.warm_cache:
            path = self.workdir / "cache"
            path.mkdir(parents=True, exist_ok=True)
            return path
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.workdir))

    def _environ(self, cache: Path) -> dict[str, str]:
        environ = dict(os.environ)
        environ.pop("CUDA_FORCE_PTX_JIT", None)
        environ.setdefault("YOLO_OFFLINE", "1")
        environ["CUDA_CACHE_PATH"] = str(cache)
        return environ | self.env

    def spawn(self) -> Run:
        """One child process; its run is returned (failures as a run with ``error``), not kept."""
        cache = self._cache_dir()
        spawned = time.time()
        start = time.perf_counter()
        argument = json.dumps({"spec": asdict(self.spec), "spawned": spawned})
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
            return Run({}, elapsed, folder_bytes(cache), error=f"timed out after {self.timeout_s:g} s")
        elapsed = 1000.0 * (time.perf_counter() - start)
        return self._parse(done, elapsed, folder_bytes(cache))

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
) -> ColdStart:
    """``runs`` cold starts of ``scenario``, after one untimed priming run (which fills the JIT cache
    of a warm scenario and the OS file cache of every scenario). Stops at the first failed run."""
    with tempfile.TemporaryDirectory(prefix="kernelgate-coldstart-") as work:
        runner = Runner(spec, scenario, Path(work), extra_env, timeout_s)
        if prime:
            first = runner.spawn()
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
    return f"{run.total_ms / 1000.0:.2f} s to steady state, JIT cache {run.cache_bytes} B"
