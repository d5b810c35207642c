"""Which host measured a round: :class:`HostFingerprint` (CPU model and count, the GPU and which
physical GPU it is, driver, CUDA runtime, torch, cuDNN, PCIe link, max clocks, power limit), its short
:attr:`~HostFingerprint.id`, and :class:`RecordedHosts`, the hosts that recorded a baseline's rounds.

Every round of a measurement carries the fingerprint of the host that measured it
(``Measurement.hosts``), so a baseline recorded by several runners of one architecture says which
round came from which. Two rounds come from the same host when their ids are equal: the same physical
GPU (a hash of its NVML UUID, :func:`~kernelgate.machine.identity.hashed_gpu_id`; never the UUID or
serial itself), the same CPU model and the same driver (a driver update can change kernel speed, so it
makes a new host). A round recorded before fingerprints existed has none: an unknown host.

All of it is read (NVML queries, ``/proc/cpuinfo``, the round's recorded environment); nothing here
changes a GPU setting.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from kernelgate.config import record_rounds_command
from kernelgate.machine.identity import GpuIdentity, cpu_model, read_identity
from kernelgate.machine.software import cudnn_version

_TEXT = ("cpu", "gpu", "gpu_id", "driver", "cuda", "torch", "cudnn")
_WHOLE = ("cpu_count", "pcie_gen", "pcie_width", "sm_clock_max_mhz", "mem_clock_max_mhz")


@dataclass(frozen=True)
class HostFingerprint:
    """The host of one round; every field but ``cpu`` may be None where it could not be read."""

    cpu: str
    cpu_count: int | None = None
    gpu: str | None = None
    gpu_id: str | None = None  # hashed_gpu_id(UUID): which physical GPU, not its UUID or serial
    driver: str | None = None
    cuda: str | None = None  # torch.version.cuda, the CUDA runtime torch was built with
    torch: str | None = None
    cudnn: str | None = None  # as torch.backends.cudnn.version() gives it (91900)
    pcie_gen: int | None = None
    pcie_width: int | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    power_limit_w: float | None = None

    @property
    def id(self) -> str:
        """8 hex digits, stable: a hash of the GPU id, the CPU model and the driver."""
        text = "\0".join((self.gpu_id or "", self.cpu, self.driver or ""))
        return hashlib.blake2b(f"kernelgate-host\0{text}".encode(), digest_size=4).hexdigest()

    def short(self) -> str:
        """``host 3f2a9c1e: GPU NVIDIA H200 #9f3e2a1b0c4d, CPU Intel(R) Xeon(R) Processor (16 CPUs),
        driver 580.159.04``: what tells two hosts apart (``#``: the hash of the GPU's UUID)."""
        gpu = "no GPU" if self.gpu is None else f"GPU {self.gpu}"
        gpu += f" #{self.gpu_id}" if self.gpu_id else ""
        cpus = f" ({self.cpu_count} CPUs)" if self.cpu_count else ""
        driver = f", driver {self.driver}" if self.driver else ""
        return f"host {self.id}: {gpu}, CPU {self.cpu}{cpus}{driver}"

    def describe(self) -> str:
        """:meth:`short` and the rest: software versions, PCIe link, max clocks, power limit."""
        parts = [self.short()]
        parts += [f"{name} {value}" for name, value in (("CUDA", self.cuda), ("torch", self.torch)) if value]
        if self.cudnn:
            parts.append(f"cuDNN {cudnn_version(self.cudnn)}")
        if self.pcie_gen or self.pcie_width:
            parts.append(f"PCIe gen{self.pcie_gen or '?'} x{self.pcie_width or '?'}")
        if self.sm_clock_max_mhz or self.mem_clock_max_mhz:
            parts.append(
                f"max {self.sm_clock_max_mhz or '?'}/{self.mem_clock_max_mhz or '?'} MHz (SM/memory)"
            )
        if self.power_limit_w is not None:
            parts.append(f"power limit {self.power_limit_w:g} W")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """Every field (None as null) and the id, for people reading a baseline diff."""
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"id": self.id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostFingerprint:
        """A fingerprint as :meth:`to_json` wrote it; a field it lacks (an older kernelgate) is None.
        Raises ValueError or TypeError where one is malformed or the id does not match the fields."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a host fingerprint must be an object, not {type(data).__name__}")
        values: dict[str, Any] = {}
        for name in _TEXT:
            value = data.get(name)
            if not (value is None or isinstance(value, str)) or (name == "cpu" and not value):
                raise ValueError(f"host fingerprint: {name} = {value!r} must be text")
            values[name] = value
        for name in _WHOLE:
            value = data.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"host fingerprint: {name} = {value!r} must be a whole number")
            values[name] = value
        power = data.get("power_limit_w")
        if power is not None and (not isinstance(power, int | float) or isinstance(power, bool)):
            raise ValueError(f"host fingerprint: power_limit_w = {power!r} must be a number")
        host = cls(**values, power_limit_w=None if power is None else float(power))
        if "id" in data and data["id"] != host.id:
            raise ValueError(
                f"host fingerprint: id {data['id']!r} does not match its fields ({host.id}): edited by hand?"
            )
        return host

    @classmethod
    def of(
        cls,
        identity: GpuIdentity | None,
        *,
        cpu: str,
        cpu_count: int | None,
        torch: str | None,
        cuda: str | None,
        cudnn: str | None,
    ) -> HostFingerprint:
        """The fingerprint of a host whose GPU (None: none, or not read) is ``identity``."""
        i = identity
        return cls(
            cpu=cpu or "unknown",
            cpu_count=cpu_count,
            gpu=None if i is None else i.name,
            gpu_id=None if i is None else i.gpu_id,
            driver=None if i is None else i.driver,
            cuda=cuda,
            torch=torch,
            cudnn=cudnn,
            pcie_gen=None if i is None else i.pcie_gen,
            pcie_width=None if i is None else i.pcie_width,
            sm_clock_max_mhz=None if i is None else i.sm_clock_max_mhz,
            mem_clock_max_mhz=None if i is None else i.mem_clock_max_mhz,
            power_limit_w=None if i is None else i.power_limit_w,
        )


def this_round(environment: Mapping[str, str], gpu: bool) -> HostFingerprint:
    """The fingerprint of the host measuring now: CPU and software from the round's recorded
    environment (:func:`kernelgate.machine.software.collect`), the GPU through NVML (``gpu``: the
    round ran on one)."""
    return HostFingerprint.of(
        read_identity() if gpu else None,
        cpu=environment.get("cpu") or cpu_model(),
        cpu_count=os.cpu_count(),
        torch=environment.get("torch"),
        cuda=environment.get("cuda"),
        cudnn=environment.get("cudnn"),
    )


@dataclass(frozen=True)
class RecordedHosts:
    """The hosts that recorded some rounds (one baseline entry's, or a whole file's): each distinct
    host once, in the order of its first round, how many rounds each recorded, and how many rounds
    carry no fingerprint (recorded by a kernelgate without them)."""

    hosts: tuple[HostFingerprint, ...] = ()
    rounds: tuple[int, ...] = ()
    unknown: int = 0

    @classmethod
    def of(cls, round_hosts: Iterable[HostFingerprint | None]) -> RecordedHosts:
        found: dict[str, tuple[HostFingerprint, int]] = {}
        unknown = 0
        for host in round_hosts:
            if host is None:
                unknown += 1
                continue
            first, n = found.get(host.id, (host, 0))
            found[host.id] = (first, n + 1)
        return cls(tuple(h for h, _ in found.values()), tuple(n for _, n in found.values()), unknown)

    def __add__(self, other: RecordedHosts) -> RecordedHosts:
        merged = RecordedHosts.of(
            [
                h
                for hosts in (self, other)
                for h, n in zip(hosts.hosts, hosts.rounds, strict=True)
                for _ in range(n)
            ]
        )
        return RecordedHosts(merged.hosts, merged.rounds, self.unknown + other.unknown)

    def includes(self, host: HostFingerprint) -> bool:
        return any(h.id == host.id for h in self.hosts)

    def listing(self, limit: int = 4) -> str:
        """``host 3f2a9c1e: GPU …, CPU …, driver … (3 rounds); …; 2 rounds of an unknown host …``."""
        items = [
            f"{h.short()} ({n} round{'s' * (n != 1)})" for h, n in zip(self.hosts, self.rounds, strict=True)
        ]
        shown = items[:limit] + ([f"and {len(items) - limit} more"] if len(items) > limit else [])
        if self.unknown:
            shown.append(
                f"{self.unknown} round{'s' * (self.unknown != 1)} of an unknown host (no fingerprint)"
            )
        return "; ".join(shown)

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": [
                {"id": h.id, "description": h.describe(), "rounds": n}
                for h, n in zip(self.hosts, self.rounds, strict=True)
            ],
            "unknown_rounds": self.unknown,
        }


#: Rounds a runner appends of its own: the screen against a runner's own rounds goes by their spread
#: (verdict/ownrange.py), which one round does not have (docs/fleet.md).
OWN_ROUNDS = 2


def add_runner_command() -> str:
    """The command that adds this runner's rounds to its architecture's baseline: two, each in a fresh
    process (``kernelgate record --rounds 2 --append -- benchmarks``). A runner screened against rounds
    of its own runs A/A several times faster than against other hosts' rounds alone, which send more
    to the same-host judge (docs/fleet.md)."""
    return record_rounds_command(rounds=OWN_ROUNDS, append=True)


def stranger(runner: HostFingerprint, recorded: RecordedHosts, where: str) -> str | None:
    """Why it matters that ``runner`` is none of the hosts that recorded the baseline ``where``
    (``baselines/<arch>/``); None where it is one of them, or none is known. What adds it:
    :func:`add_runner_command`."""
    if not recorded.hosts or recorded.includes(runner):
        return None
    return (
        f"this runner ({runner.short()}) is none of the {len(recorded.hosts)} host(s) that recorded "
        f"{where} ({recorded.listing()}): the stored-baseline screen will see a host offset; verdicts come "
        "from the same-host A/B (confirm = true, the default)"
    )


def hosts_from_json(raw: Any, rounds: int) -> tuple[HostFingerprint | None, ...]:
    """``Measurement.hosts`` as a record holds it: one fingerprint (or null) per round, ``()`` where
    the record has none (an older kernelgate). Raises ValueError where there is not one per round."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != rounds:
        raise ValueError(
            f"'hosts' must list one host fingerprint (or null) for each of the {rounds} round(s)"
        )
    hosts = tuple(None if h is None else HostFingerprint.from_json(h) for h in raw)
    return hosts if any(hosts) else ()
