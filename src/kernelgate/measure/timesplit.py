"""Where the time of one forward goes: device-busy time against host overhead, and what bounds it.

``wall`` is pytest-benchmark's latency per forward (median), ``busy`` the time the device was busy
in a profiled forward (median of the per-iteration union of its activity), ``host`` the rest
(:attr:`kernelgate.measure.results.Measurement.host_overhead_us`: Python, framework and launch cost, and
waiting). The busy share of the wall time classifies a benchmark:

* below :data:`LAUNCH_BOUND_BELOW` (50 %): **launch-bound**. The host takes more of each forward
  than the device, so even free kernels would not halve the latency; eager batch-1 YOLO-n on a
  fast GPU sits here (19 to 29 % on the H200).
* from :data:`DEVICE_BOUND_FROM` (85 %): **GPU-bound**. The device idles less than 15 % of the
  forward; kernel time decides the latency (a CUDA-graph replay, large batches).
* between: **mixed**.

Busy and wall come from different forwards (profiled ones and timed ones). Where busy exceeds the
wall time by more than :data:`MAX_BUSY_SHARE` (110 %), the profiled forwards ran slower than the
timed ones (profiler overhead on many small CPU operators, a loaded machine) and the time does not
split: such a benchmark reads **busy > wall** and no host time is given.

On a CPU run there are no kernels: ``busy`` is the time CPU operators ran (the union of the
outermost ``cpu_op`` events over all threads) and ``host`` the framework time between them, so the
same shares read **overhead-bound**, **mixed** and **op-bound** (and **ops > wall**), and the
figures are named "CPU ops".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelgate.units import duration

if TYPE_CHECKING:
    from kernelgate.measure.results import Measurement

LAUNCH_BOUND_BELOW = 0.50
DEVICE_BOUND_FROM = 0.85
MAX_BUSY_SHARE = 1.10


class Bound(enum.Enum):
    HOST = "host"
    MIXED = "mixed"
    DEVICE = "device"
    UNSPLIT = "unsplit"  # busy over wall: the profiled forwards ran slower than the timed ones


def classify(busy_share: float) -> Bound:
    """What bounds a forward whose device is busy ``busy_share`` (0..1) of its wall time."""
    if busy_share < LAUNCH_BOUND_BELOW:
        return Bound.HOST
    if busy_share > MAX_BUSY_SHARE:
        return Bound.UNSPLIT
    if busy_share >= DEVICE_BOUND_FROM:
        return Bound.DEVICE
    return Bound.MIXED


# How each bound reads on a GPU and on a CPU run.
WORDS = {
    True: {
        Bound.HOST: "launch-bound",
        Bound.MIXED: "mixed",
        Bound.DEVICE: "GPU-bound",
        Bound.UNSPLIT: "busy > wall",
    },
    False: {
        Bound.HOST: "overhead-bound",
        Bound.MIXED: "mixed",
        Bound.DEVICE: "op-bound",
        Bound.UNSPLIT: "ops > wall",
    },
}


def is_gpu(device: str) -> bool:
    return device.startswith("cuda")


def busy_name(device: str) -> str:
    """What "busy" measured on ``device``: GPU activity, or CPU operators on a CPU run."""
    return "GPU busy" if is_gpu(device) else "CPU ops"


@dataclass(frozen=True)
class TimeSplit:
    """Medians in µs of one benchmark: ``wall`` = ``busy`` + ``host`` (host never below 0)."""

    device: str
    wall_us: float
    busy_us: float
    host_us: float

    @property
    def gpu(self) -> bool:
        return is_gpu(self.device)

    @property
    def busy_share(self) -> float:
        return self.busy_us / self.wall_us if self.wall_us > 0 else 0.0

    @property
    def bound(self) -> Bound:
        return classify(self.busy_share)

    @property
    def label(self) -> str:
        """``launch-bound``, ``mixed``, ``GPU-bound`` (CPU: ``overhead-bound``, ``mixed``, ``op-bound``)."""
        return WORDS[self.gpu][self.bound]

    @property
    def busy_name(self) -> str:
        return busy_name(self.device)

    @property
    def split(self) -> bool:
        """Whether busy and host add up to the wall time (see :data:`MAX_BUSY_SHARE`)."""
        return self.bound is not Bound.UNSPLIT

    def sentence(self) -> str:
        """``wall 3.982 ms = GPU busy 1.174 ms (29 %) + host 2.808 ms → launch-bound``."""
        if not self.split:
            return (
                f"wall {duration(self.wall_us)} < {self.busy_name} {duration(self.busy_us)} "
                f"({100 * self.busy_share:.0f} %) in the profiled forwards, which ran slower than the "
                "timed ones (profiler overhead): no split into busy and host"
            )
        return (
            f"wall {duration(self.wall_us)} = {self.busy_name} {duration(self.busy_us)} "
            f"({100 * self.busy_share:.0f} %) + host {duration(self.host_us)} → {self.label}"
        )


def split(m: Measurement) -> TimeSplit | None:
    """The split of a measurement; None without wall-time samples (pytest-benchmark disabled) or
    without a profile (a cold-start record)."""
    if not (m.wall.n and m.busy.n):
        return None
    return TimeSplit(m.device, m.wall.median, m.busy.median, m.host_overhead_us)


def sentence(m: Measurement) -> str:
    found = split(m)
    return (
        found.sentence()
        if found
        else f"no wall time measured; {busy_name(m.device)} {duration(m.busy.median)}"
    )
