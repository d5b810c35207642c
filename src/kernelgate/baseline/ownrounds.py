"""The rounds of a baseline entry that this runner recorded itself: the screen's yardstick where a
baseline holds rounds of several hosts (baseline stage, read by the verdict's screen).

Runners of one architecture may each add rounds to ``baselines/<arch>/`` (``kernelgate record --rounds 2
--append -- benchmarks`` on each, two rounds for their spread; every round keeps its host's fingerprint).
Against another host's rounds the screen sees that host's offset, makes most configurations suspects, and
the same-host judge then measures base and head for minutes; against its own rounds a runner is exact to a
fraction of a %, and an unchanged run is the screen alone (docs/fleet.md). So where this runner recorded
some of an entry's rounds and other hosts recorded the others, the screen compares with this runner's rounds
alone, and says so; elsewhere with all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kernelgate.machine.fingerprint import HostFingerprint
from kernelgate.measure.results import Dist, LayerStat, Measurement


def select(dist: Dist, keep: Sequence[int], rounds: int) -> Dist:
    """The samples of rounds ``keep`` (0-based) of ``dist``, a distribution of ``rounds`` rounds; as it
    is where it has another number of rounds (an optional figure the rounds did not all record)."""
    parts = dist.round_samples()
    if len(parts) != rounds or not dist.n:
        return dist
    chosen = [parts[i] for i in keep]
    sizes = tuple(len(p) for p in chosen) if len(keep) > 1 else ()
    return Dist(tuple(v for part in chosen for v in part), sizes)


def rounds_of(m: Measurement, keep: Sequence[int]) -> Measurement:
    """``m`` (rounds combined, :func:`kernelgate.measure.results.combine`) with rounds ``keep`` alone
    (0-based, in order). A kernel or layer that only the other rounds ran (``combine`` gave it zeros in
    these) is left out, as a baseline these rounds alone had made would not hold it."""
    n = len(m.total.round_samples())

    def sel(d: Dist) -> Dist:
        return select(d, keep, n)

    def kept(whole: Dist) -> bool:  # not one that only other rounds ran (zeros here from combine)
        return any(v > 0 for v in sel(whole).samples) or not any(v > 0 for v in whole.samples)

    layers = tuple(LayerStat(lay.name, lay.type, sel(lay.time)) for lay in m.layers if kept(lay.time))
    kernels = tuple(replace(k, time=sel(k.time)) for k in m.kernels if kept(k.time))
    hosts = m.round_hosts
    return replace(
        m,
        iterations=sel(m.total).n,
        total=sel(m.total),
        busy=sel(m.busy),
        wall=sel(m.wall),
        layers=layers,
        kernels=kernels,
        host_layers=tuple(LayerStat(lay.name, lay.type, sel(lay.time)) for lay in m.host_layers),
        gpu_states=tuple(m.gpu_states[i] for i in keep) if len(m.gpu_states) == n else m.gpu_states,
        hosts=tuple(hosts[i] for i in keep) if m.hosts and len(hosts) == n else m.hosts,
        cpu_probe=sel(m.cpu_probe),
        cpu_probe_host=sel(m.cpu_probe_host),
    )


def _mine(m: Measurement, runner: HostFingerprint | None) -> list[int]:
    """The rounds of ``m`` (0-based) that ``runner`` recorded; none where the rounds carry no
    fingerprints (or not one each)."""
    hosts = m.round_hosts
    if runner is None or len(hosts) != len(m.total.round_samples()):
        return []
    return [i for i, h in enumerate(hosts) if h is not None and h.id == runner.id]


def own(m: Measurement, runner: HostFingerprint | None) -> tuple[Measurement, str]:
    """The rounds of baseline entry ``m`` that ``runner`` recorded, where other hosts recorded the
    others, and the note that says so; ``m`` and '' otherwise (one host, none of them this runner, or
    rounds without fingerprints)."""
    return _own(m, runner, _mine(m, runner))


def _own(m: Measurement, runner: HostFingerprint | None, keep: list[int]) -> tuple[Measurement, str]:
    hosts = m.round_hosts
    if runner is None or not keep or len(keep) == len(hosts):
        return m, ""
    others = sorted({h.id for h in hosts if h is not None and h.id != runner.id})
    note = (
        f"screened against this runner's own {len(keep)} of the baseline's {len(hosts)} rounds (host "
        f"{runner.id}; the others of host{'s' * (len(others) != 1)} {', '.join(others) or 'unknown'}): "
        "another host's offset is not this change"
    )
    return rounds_of(m, keep), note


def recorded_by(m: Measurement, runner: HostFingerprint | None) -> bool:
    """Whether ``runner`` recorded every round of ``m`` (rounds with fingerprints, one at least)."""
    keep = _mine(m, runner)
    return bool(keep) and len(keep) == len(m.round_hosts)


def screened_against(m: Measurement, runner: HostFingerprint | None) -> tuple[Measurement, str, bool]:
    """What the screen compares ``runner``'s run with (:func:`own`), its note, and whether it goes by
    the spread of the runner's own rounds there (two or more: :mod:`kernelgate.verdict.ownrange`)."""
    keep = _mine(m, runner)
    stored, note = _own(m, runner, keep)
    return stored, note, len(keep) >= 2
