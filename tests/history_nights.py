"""Nights of recorded noise for the history tests: the committed H200 baseline's round medians.

The baseline's three rounds of each configuration ran in separate processes on one runner. For each
figure (the total, or a layer name such as ``model.9``) every round's median over the mean of its
configuration's three is a recorded deviation; the deviations of one figure name, pooled over the
configurations that have it, give night ``n`` of a configuration its ``n``-th deviation after an offset
of its own (no two configurations draw the same sequence). The nights are then as noisy as the
runner's processes, not more: the nightly's own nights, once recorded, are the real test
(tools/bisect-bench, docs/history.md).
"""

from __future__ import annotations

import functools
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from kernelgate.baseline import store
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.history.nights import TOTAL, Config, Figure, Night
from kernelgate.machine.fingerprint import HostFingerprint

ROOT = Path(__file__).parent.parent
H200 = ROOT / "baselines" / "sm90-nvidia-h200" / "0001_kernelgate.json"
ARCH = "sm90-nvidia-h200"
HOST = HostFingerprint(
    cpu="Intel(R) Xeon(R) Processor", cpu_count=16, gpu="NVIDIA H200", gpu_id="02e993b6e2c6",
    driver="580.159.04", cuda="13.0", torch="2.11.0+cu130", cudnn="91900",
)  # fmt: skip
SOFTWARE = {"driver": "580.159.04", "cuda": "13.0", "torch": "2.11.0+cu130", "cudnn": "91900"}


@functools.cache
def recorded() -> tuple[dict[str, tuple[str, float, dict[str, float]]], dict[str, tuple[float, ...]]]:
    """Each kernel configuration's (node id, total median, layer medians), and the recorded relative
    deviations of each figure name."""
    configs: dict[str, tuple[str, float, dict[str, float]]] = {}
    pools: dict[str, list[float]] = {}
    for entry in store.load(H200).values():
        if coldverdict.record_of(entry) is not None:
            continue
        m = entry.measurement
        for name, dist in [(TOTAL, m.total), *((lay.name, lay.time) for lay in m.layers)]:
            rounds = dist.round_medians
            mean = statistics.fmean(rounds)
            if mean > 0:
                pools.setdefault(name, []).extend(r / mean - 1.0 for r in rounds)
        configs[m.benchmark] = (
            entry.fullname,
            m.total.median,
            {lay.name: lay.time.median for lay in m.layers},
        )
    return configs, {k: tuple(v) for k, v in pools.items()}


def nights(
    count: int,
    commits: Sequence[str] | None = None,
    step: tuple[str, str, int, float] | None = None,
    host_change_at: int | None = None,
    more: Sequence[tuple[str, str, int, float]] = (),
) -> list[Night]:
    """``count`` nights of the H200's configurations with recorded noise. ``step`` (and each of
    ``more``): (configuration, figure, first night, factor) multiplies that figure from that night on;
    ``host_change_at``: the night from which a new driver (and so a new host id) measures."""
    configs, pools = recorded()
    steps = ([step] if step is not None else []) + list(more)
    out = []
    for n in range(count):
        made = {}
        for offset, (benchmark, (fullname, total, layers)) in enumerate(sorted(configs.items())):

            def value(
                name: str, median: float, n: int = n, offset: int = offset, benchmark: str = benchmark
            ) -> float:
                pool = pools[name]
                v = median * (1.0 + pool[(n + 3 * offset) % len(pool)])
                for at in steps:
                    if (benchmark, name) == at[:2] and n >= at[2]:
                        v *= at[3]
                return round(v, 3)

            made[benchmark] = Config(
                fullname,
                Figure(value(TOTAL, total), (value(TOTAL, total),)),
                {name: Figure(value(name, med), (value(name, med),)) for name, med in layers.items()},
            )
        host, software = HOST, dict(SOFTWARE)
        if host_change_at is not None and n >= host_change_at:
            host, software = replace(HOST, driver="590.48.01"), software | {"driver": "590.48.01"}
        commit = commits[n] if commits is not None else f"{n:040x}"
        out.append(Night(ARCH, commit, f"2027-01-{n + 1:02d}T03:17:00+00:00", host, software, made))
    return out


def git_history(repo: Path, count: int, slow_from: int | None, factor: float = 1.03) -> list[str]:
    """A git repository of ``count`` commits after a first one (GOOD), each writing ``speed.txt``:
    100, or ``100 * factor`` from commit ``slow_from`` (1-based) on. Returns GOOD, then the commits."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    repo.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main")
    git("config", "user.email", "ci@example.com")
    git("config", "user.name", "ci")
    shas = []
    for i in range(count + 1):
        slow = slow_from is not None and i >= slow_from
        (repo / "speed.txt").write_text(f"{100.0 * (factor if slow else 1.0)}\n")
        (repo / "log.txt").write_text(f"commit {i}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"change {i}" + (" (slows model.9)" if i == slow_from else ""))
        shas.append(git("rev-parse", "HEAD"))
    return shas
