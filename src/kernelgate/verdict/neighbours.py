"""Configurations measured one after another in one process: a change in one can move the next.

Part of the verdict stage: the same-host judge measures its suspects one after another in each
side's process, and what a configuration leaves in the process (where the next model's tensors land,
it seems) is part of the next one's measurement there: a head that changed some configurations has
failed others measured after them with the same kernels on both sides, small elementwise and layout
kernels a few % off (docs/sensitivity.md, "Four H100 GPUs of one machine" and "Rounds appended late,
and layers at a few levels per process").

So the judge measures, in each process, the configurations whose forward did not change before
those whose forward did (:func:`unchanged_first`): what comes before an unchanged configuration then
runs the same code on both sides. Before the first round the screen says which changed
(:func:`screen_changed`: the head's forward against the stored baseline's, host-independent), after
it the base's and head's processes (:func:`measured_changed`). Such a regression is measured, so the
verdict stands; where a regressed configuration launches the same kernels on both sides and an
earlier one in the same processes does not, the message names the earlier one and the command that
measures this configuration alone (:func:`note`): for a first round whose order the screen's word got
wrong, and for records replayed with ``kernelgate replay``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from kernelgate.measure.results import Measurement
from kernelgate.verdict import structure
from kernelgate.verdict.samehost import Decision, Outcome

T = TypeVar("T")


def forward_changed(base: Measurement, head: Measurement) -> bool:
    """Whether the head's forward launches something else than the base's (kernels, their launches, a
    wait for the device), measured on this runner."""
    return bool(structure.changes(base, head))


def screen_changed(stored: Mapping[str, Any], measured: Mapping[str, Any] | None) -> bool:
    """Whether the screen's measurement launches something else than the stored baseline's (records
    as JSON; False where the screen kept none): the head's change, on any runner."""
    if measured is None:
        return False
    return forward_changed(Measurement.from_json(stored), Measurement.from_json(measured))


def measured_changed(
    names: Mapping[str, str],
    base: Mapping[str, Sequence[Mapping[str, Any]]],
    head: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, bool]:
    """:func:`forward_changed` by configuration (``names``: node id -> benchmark name), from the first
    base and head process of each (``base``, ``head``: each side's records by node id); only those
    both sides measured."""
    return {
        name: forward_changed(Measurement.from_json(base[node][0]), Measurement.from_json(head[node][0]))
        for node, name in names.items()
        if base.get(node) and head.get(node)
    }


def unchanged_first(items: Sequence[T], name: Callable[[T], str], changed: Mapping[str, bool]) -> list[T]:
    """``items`` in the order a process measures them: those whose forward did not change (or is not
    known to have: a cold start, which runs in processes of its own, keeps its place among them) first,
    then those whose forward changed, each group in its given order."""
    return sorted(items, key=lambda item: changed.get(name(item), False))


def earlier_changed(rounds: Sequence[Sequence[str]], changed: Mapping[str, bool], name: str) -> list[str]:
    """The configurations whose forward changed that each process measured before ``name`` (every
    round's order in ``rounds``; a round that did not measure ``name`` does not count), where
    ``name``'s own forward did not change; empty otherwise."""
    if changed.get(name, True):
        return []
    orders = [list(order) for order in rounds if name in order]
    if not orders:
        return []
    first = orders[0][: orders[0].index(name)]
    return [o for o in first if changed.get(o, False) and all(o in r[: r.index(name)] for r in orders)]


def note(earlier: Sequence[str], command: str) -> str:
    """The sentence for a regression measured after ``earlier`` (from :func:`earlier_changed`)."""
    named = ", ".join(earlier[:3]) + (f" and {len(earlier) - 3} more" if len(earlier) > 3 else "")
    return (
        f"its kernels are the same on both sides, and every process measured it after {named}, "
        "whose forward did change: what that leaves in a process can move the next "
        "configuration's small kernels by a few % (seen on H100 and H200 machines). To tell, "
        f"measure it alone: {command}"
    )


def neighboured(
    decision: Decision, name: str, rounds: Sequence[Sequence[str]], changed: Mapping[str, bool], command: str
) -> Decision:
    """``decision`` with :func:`note` added to its reason where it is a regression measured after a
    configuration whose forward changed while its own did not, in every process (benchmark names,
    each round's order in ``rounds``); ``command`` measures it alone."""
    if decision.outcome is not Outcome.REGRESSION:
        return decision
    earlier = earlier_changed(rounds, changed, name)
    if not earlier:
        return decision
    return replace(decision, reason=f"{decision.reason}; {note(earlier, command)}")
