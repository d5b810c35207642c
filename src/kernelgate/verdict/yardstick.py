"""Is a baseline entry a valid yardstick for a current result? One answer for the pytest plugin,
``kernelgate compare`` and ``kernelgate report``.

A pair is not compared (and fails, with the reason and the fix) when:

- the two are of different architectures (another GPU of the same architecture only where
  ``--kernelgate-allow-other-gpu`` asked),
- either was unreliable when measured, or does not add up (:func:`kernelgate.measure.integrity.check_record`),
- the baseline's rounds disagree beyond what noise explains (:mod:`kernelgate.baseline.rounds`)
  and no reason was given to keep them,
- the numbers are not plausible: a forward of more than an hour, no time at all, or a baseline
  total :data:`PLAUSIBLE_RATIO` times the current one or more. No code change makes a whole model
  tenfold faster; a baseline scaled by hand (every value x1e250, consistent with itself) would
  otherwise make everything "improved" and pass. (Tenfold slower fails anyway, as regressions with
  their layers named, which says more than "not comparable".) Not on a CPU: op times of a small
  model on a loaded CPU swing tenfold between processes (seen in this repository's CPU tests).
"""

from __future__ import annotations

from collections.abc import Mapping

from kernelgate.baseline import rounds
from kernelgate.baseline.reading import Entry
from kernelgate.config import GateConfig, record_command, record_rounds_command
from kernelgate.machine.identity import same_architecture
from kernelgate.measure import integrity, placement
from kernelgate.measure.results import Measurement

PLAUSIBLE_RATIO = 10.0
MAX_FORWARD_US = 3600e6  # one hour


def match(base: Mapping[str, Entry], current: Entry) -> Entry | None:
    """The baseline entry of ``current``: by pytest node id, else by benchmark id (the same suite
    run from another tree or folder) where exactly one baseline entry has that id."""
    found = base.get(current.fullname)
    if found is not None:
        return found
    same = [e for e in base.values() if e.measurement.benchmark == current.measurement.benchmark]
    return same[0] if len(same) == 1 else None


def plausibility(base: Measurement, current: Measurement) -> list[str]:
    """Why the totals of ``base`` and ``current`` cannot both be measurements of the same forward."""
    problems = []
    for label, m in (("baseline", base), ("current result", current)):
        total = m.total.median
        if total > MAX_FORWARD_US:
            problems.append(
                f"the {label}'s forward takes {total:.4g} µs ({total / 3600e6:.3g} h; more than 1 h is no "
                "measurement of one forward)"
            )
        elif total <= 0:
            problems.append(f"the {label}'s total is {total:g} µs (no time at all)")
    if problems:
        return problems
    b, c = base.total.median, current.total.median
    if b >= PLAUSIBLE_RATIO * c and not current.arch.startswith("cpu-"):
        problems.append(
            f"the baseline's total ({b:.4g} µs) is {b / c:.3g}x the current one ({c:.4g} µs): a model "
            f"{PLAUSIBLE_RATIO:g}x faster or more is not a code change but another setup (device, precision, "
            "batch) or an edited file"
        )
    return problems


def pair_problems(
    base: Entry, current: Measurement, config: GateConfig, *, other_gpu: bool = False
) -> list[str]:
    """Why ``base`` is no yardstick for ``current``; empty when the two may be compared.

    ``other_gpu``: a baseline of another GPU of the same architecture is allowed.
    """
    problems = []
    b = base.measurement
    if b.arch != current.arch and not (other_gpu and same_architecture(current.arch, [b.arch])):
        problems.append(f"the baseline is of {b.arch}, the current result of {current.arch}")
    for label, m in (("baseline", b), ("current result", current)):
        reasons = list(m.unreliable_reasons) + integrity.check_record(m)
        if reasons:
            problems.append(f"the {label} is unreliable ({'; '.join(reasons)})")
    found = rounds.disagreements(b, config, rounds.kept_rounds(base.benchmark))
    if found:
        listed = "; ".join(str(d) for d in found[:3]) + (f"; {len(found) - 3} more" if len(found) > 3 else "")
        problems.append(f"the baseline's rounds disagree beyond what noise explains ({listed})")
    problems += plausibility(b, current)
    problems += thread_mismatch(b, current)
    problems += placement_mismatch(b, current)
    return problems


def placement_mismatch(base: Measurement, current: Measurement) -> list[str]:
    """Records of two methods: measured in one place of GPU memory (a kernelgate before placements)
    against the mean of several (kernelgate.measure.placement), whose layers sat 2-4 % higher on an
    H200 (the copies in turn may find less of each other's data in the L2 cache: not measured)."""
    mixed = placement.mixed([base, current])
    return [f"the baseline and this run were {mixed}"] if mixed else []


def thread_mismatch(base: Measurement, current: Measurement) -> list[str]:
    """On a CPU every op is host work on torch's intra-op threads: another count is another machine
    (:mod:`kernelgate.machine.threads`). On a GPU it is an environment change the message names."""
    before, now = base.environment.get("torch_threads"), current.environment.get("torch_threads")
    if not current.arch.startswith("cpu-") or not before or not now or before == now:
        return []
    return [
        f"on a CPU the ops run on torch's intra-op threads: the baseline ran with {before}, this run with "
        f"{now} (set threads = {before} in [tool.kernelgate] to measure as the baseline did)"
    ]


def refusal(benchmark: str, where: str, problems: list[str], target: str) -> str:
    """The message of a pair that is not compared: what is wrong, with the numbers, and the fix
    (``target``: the test's node id, for the commands that re-record it)."""
    return (
        f"kernelgate: {benchmark} is not compared with its baseline in {where}: {'; '.join(problems)}. "
        f"If the baseline is what is wrong, re-record it on this machine: {record_command(target)} "
        f"(in rounds: {record_rounds_command(target)})"
    )
