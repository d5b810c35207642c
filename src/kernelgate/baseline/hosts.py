"""The hosts that recorded a baseline (:mod:`kernelgate.machine.fingerprint`): per file, and whether
this runner is one of them.

Several runners of one architecture may append rounds to ``baselines/<arch>/`` (``--kernelgate-append``);
each round keeps its own host (``Entry.hosts`` lists them per benchmark). A host's offset is no
noise: rounds of two hosts that disagree beyond ``round_tolerance`` are refused like any others, and
the refusal says that they came from different hosts and what to do
(:func:`kernelgate.baseline.rounds.other_hosts_note`). ``kernelgate doctor`` and the plugin say when
this runner is none of the hosts (:func:`recorded`, :func:`runner_notes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from kernelgate.baseline import reading
from kernelgate.baseline.errors import BaselineError
from kernelgate.baseline.names import shown
from kernelgate.machine.fingerprint import HostFingerprint, RecordedHosts, add_runner_command, stranger
from kernelgate.measure.results import Measurement


def of_entries(entries: Iterable[reading.Entry]) -> RecordedHosts:
    """The hosts that recorded any round of ``entries`` (a baseline file's). A host's rounds are the
    most it recorded of any one configuration: one recording run measures every configuration, so
    three rounds of ten configurations are 3 rounds, not 30."""
    most: dict[str, tuple[HostFingerprint, int]] = {}
    unknown = 0
    for entry in entries:
        for host, n in zip(entry.hosts.hosts, entry.hosts.rounds, strict=True):
            first, m = most.get(host.id, (host, 0))
            most[host.id] = (first, max(m, n))
        unknown = max(unknown, entry.hosts.unknown)
    return RecordedHosts(tuple(h for h, _ in most.values()), tuple(n for _, n in most.values()), unknown)


def where(baseline_dir: Path, key: str) -> str:
    """``baselines/<key>/``, as messages name the folder of an architecture's baseline."""
    return shown(baseline_dir / key) + "/"


def recorded(baseline_dir: Path, key: str) -> RecordedHosts | None:
    """The hosts that recorded the baseline of ``key`` (None: no such baseline, or an unreadable one);
    ``kernelgate doctor`` checks this machine against them."""
    path = reading.path_for(baseline_dir, key)
    if not path.is_file():
        return None
    try:
        return of_entries(reading.load(path).values())
    except BaselineError:
        return None


def runner_notes(
    entries: Mapping[str, reading.Entry], measured: Iterable[Measurement], folder: str
) -> list[str]:
    """One note per host of this run (``measured``) that is none of the hosts that recorded
    ``entries`` (the baseline in ``folder``); none where no recorded round has a fingerprint."""
    known = of_entries(entries.values())
    runners = RecordedHosts.of(h for m in measured for h in m.round_hosts)
    texts = [text for host in runners.hosts if (text := stranger(host, known, folder))]
    return [f"kernelgate: {text}. To add this runner: {add_runner_command()}" for text in texts]
