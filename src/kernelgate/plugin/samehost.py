"""Run the same-host judge at the end of a session: base and head on this runner, for each suspect.

A suspect is a benchmark the stored-baseline screen failed. The base commit (``base`` in
``[tool.kernelgate]``: ``auto`` = the merge base of HEAD with the pull request's base branch, or with
``origin/main``; or any git ref) is checked out as a git worktree outside the repository; then
rounds alternate base and head (ABBA...), each side a fresh pytest process that measures every
still-undecided suspect with the user's whole invocation (:mod:`kernelgate.plugin.invocation`) and
writes one record per test (``--kernelgate-confirm-out``); its output is kept as
``<out>/judge-logs/round<N>-<side>.log``. After each round the decision rule
(:mod:`kernelgate.verdict.samehost`) settles what it can. Packages imported from inside the head's
checkout (``src/``, an editable install) are taken from the base's checkout on the base side. Where
base and head depend on other packages, each side runs in its own environment
(:mod:`kernelgate.machine.sideenv`); one that cannot be built leaves every suspect inconclusive.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.baseline.names import safe_name
from kernelgate.config import Scope
from kernelgate.machine import bytecode, sideenv
from kernelgate.plugin import basetree, evidence, invocation, standby, startenv
from kernelgate.verdict import ab, neighbours, samehost
from kernelgate.verdict.compare import Comparison

if TYPE_CHECKING:
    import pytest

    from kernelgate.plugin.session import State

HEAD_ONLY_VARIABLES = frozenset({"KERNELGATE_SLOW_PHASE"})
# profiled steps per process in a round (the screen profiles 24; on a GPU, 3 iterations of 4
# placements): the A/B has at least confirm_min_rounds processes a side, and its cost is mostly
# profiling and reading the traces
CHILD_ITERATIONS = 12
COLDSTART_MIN_ROUNDS = 2  # one round in each order
CHILD_TIMEOUT_S = 1800
KERNEL = "kernel"
LOGS = "judge-logs"  # each child's output, under --kernelgate-out: round1-base.log, ...
COLDSTART = "coldstart"
# in a cold start's record of a round whose sides took turns run by run (plugin/standby.py)
TURNS_KEY = "kernelgate_turns"


@dataclass(frozen=True)
class Suspect:
    """A benchmark the screen failed, waiting for the same-host judge."""

    nodeid: str  # relative to the rootdir, class and parametrization included
    kind: str  # KERNEL or COLDSTART
    screen: Comparison
    baseline: Mapping[str, Any]  # the stored baseline's record (Measurement or ColdStart JSON)
    why: str = ""  # what the screen saw: "model.9 +3.2 %, wall +19.7 %", "another host's baseline"
    # the screen's own measurement (Measurement JSON; kernel suspects), kept in the judge's records so
    # that a screen rule can be replayed exactly
    measured: Mapping[str, Any] | None = None
    # the figures the screen flagged, (scope, name): each gets its base -> head answer in the verdict
    flagged: tuple[tuple[Scope, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {"nodeid": self.nodeid, "kind": self.kind, "screen": self.screen.to_json(),
               "baseline": dict(self.baseline), "why": self.why,
               "flagged": [[scope.value, name] for scope, name in self.flagged]}  # fmt: skip
        return out | ({"measured": dict(self.measured)} if self.measured is not None else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Suspect:
        flagged = tuple((Scope(scope), str(name)) for scope, name in data.get("flagged") or ())
        return cls(
            str(data["nodeid"]), str(data["kind"]), Comparison.from_json(data["screen"]), data["baseline"],
            str(data.get("why", "")), data.get("measured"), flagged,
        )  # fmt: skip


def record_file(folder: Path, nodeid: str) -> Path:
    """Where a child writes the record of test ``nodeid``."""
    return folder / f"{safe_name(nodeid)}.json"


@dataclass
class Side:
    name: str
    root: Path  # the checkout
    cwd: Path
    env: dict[str, str]
    records: dict[str, list[Mapping[str, Any]]] = dataclasses.field(default_factory=dict)


class Judge:
    """The judge of one session: the base checkout, the rounds, the decisions. One session may call
    :meth:`run` more than once (a cold start judged at its test's own time, then the suspects left
    at the session's end): the base checkout is made once, and the evidence and the logs keep every
    call's."""

    def __init__(self, config: pytest.Config, state: State, log: Callable[[str], None]) -> None:
        self.config, self.state, self.log = config, state, log
        self.rootpath = Path(config.rootpath).resolve()
        self.work = Path(tempfile.mkdtemp(prefix="kernelgate-judge-"))
        self.args = invocation.child_args(config.invocation_params.args, config.option.file_or_dir or [])
        self.orders: list[list[str]] = []  # each round's kernel benchmarks, as its processes measured them
        self.changed: dict[str, bool] = {}  # whose forward changed (verdict/neighbours.py)
        self.sides: tuple[Side, Side] | str | None = None  # made by prepare(), on first need
        # calls of run(): a call's processes have folders of their own, its cold starts' logs its number
        self.calls = 0  # (round1-base-cold.log, then round1-base-cold1.log, ...)
        # every suspect judged so far, with its records: the evidence files hold them all
        self.kept: dict[str, evidence.Kept] = {}

    def _spawn(self, side: Side, nodeids: Sequence[str], out: Path, cold: bool) -> standby.Child:
        """Start ``side``'s pytest process for ``nodeids`` (``cold``: cold starts alone), waiting for
        its go (plugin/standby.py)."""
        root = side.root
        args = invocation.mapped(self.args, self.head_root, root)
        if side.name == "base":  # the deliberate slowdown stands for a change in the head
            args = invocation.without(args, "--kernelgate-slow-layer")
        if not any(a.startswith("--kernelgate-iterations") for a in args):
            args.append(f"--kernelgate-iterations={CHILD_ITERATIONS}")
        command = [
            sys.executable, "-m", "pytest", *args,
            *[str(root / self.rootpath.relative_to(self.head_root) / n) for n in nodeids],
            "-p", "no:cacheprovider", "-q", "--kernelgate", f"--kernelgate-confirm-out={out}",
            f"--kernelgate-out={out / 'kg'}", f"--kernelgate-report-dir={out / 'report'}",
            f"--kernelgate-standby={out / standby.GO}",
        ]  # fmt: skip
        # said in the environment, not as an option: a base checkout's older kernelgate ignores it;
        # the cold starts' children take turns (plugin/standby.py)
        env = {**side.env, standby.COLD_VAR: "1", standby.TURNS_VAR: str(out)} if cold else side.env
        return standby.start(side.name, command, side.cwd, env, out)

    def _sides(self) -> tuple[Side, Side] | str:
        top = basetree.git(self.rootpath, "rev-parse", "--show-toplevel")
        if top is None:
            return f"no git repository at {self.rootpath}: the base cannot be checked out"
        self.head_root = Path(top).resolve()
        sha, how = basetree.base_commit(self.head_root, self.state.config.base)
        if sha is None:
            return (
                f"no base to measure against ({how}); set base = '<ref>' in [tool.kernelgate] or fetch "
                "the base branch (actions/checkout with fetch-depth: 0)"
            )
        tree = self.work / "base"
        added = subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=self.head_root,
                               capture_output=True, text=True, check=False)  # fmt: skip
        if added.returncode != 0:
            return f"git worktree add of the base {sha[:12]} failed: {added.stderr.strip()[-300:]}"
        self.log(f"kernelgate: same-host judge: base {sha[:12]} ({how}) in {tree}")
        project = self.rootpath.relative_to(self.head_root)  # the folder of pyproject.toml
        overlays = sideenv.prepare(self.head_root / project, tree / project, sha, self.state.config, self.log)
        if isinstance(overlays, str):
            return overlays
        cwd = Path(self.config.invocation_params.dir).resolve()
        try:
            base_cwd = tree / cwd.relative_to(self.head_root)
        except ValueError:
            base_cwd = tree
        # the environment pytest started with, not what the head's conftest.py or imports set since
        # (plugin/startenv.py): each side's code sets that again in its own processes
        start, changed = startenv.for_children(self.config)
        if changed:
            self.log(startenv.describe(changed, start))
        # where every process would compile the sources it imports, the judge's keep their bytecode
        # (machine/bytecode.py)
        cache = self.state.options.out_dir.resolve() / "bytecode"
        kept = bytecode.kept(start, cache)
        if kept is not None:
            self.log(bytecode.describe(cache))
            start = kept
        head_env = dict(start)
        # the deliberate slowdowns stand for a change in the head (--kernelgate-slow-layer likewise)
        base_env = {k: v for k, v in start.items() if k not in HEAD_ONLY_VARIABLES}
        # the packages imported from the head's checkout come from the side's checkout, before the
        # side's own environment, if it has one (kernelgate.machine.sideenv)
        roots = basetree.package_roots(self.head_root)
        sides = (Side("base", tree, base_cwd, base_env), Side("head", self.head_root, cwd, head_env))
        for side in sides:
            found = overlays.get(side.name)
            if side.name == "head" and found is None:
                continue  # the environment pytest started with, as it is
            mapped = [str(side.root / r.relative_to(self.head_root)) for r in roots]
            if mapped or found:
                side.env["PYTHONPATH"] = sideenv.pythonpath(mapped, found, start.get("PYTHONPATH"))
            if found:
                self.log(sideenv.describe(found, side.env, side.cwd))
        return sides

    def prepare(self) -> tuple[Side, Side] | str:
        """Both sides, the base checked out on first need; why there is no base, where there is none."""
        if self.sides is None:
            self.sides = self._sides()
            if not isinstance(self.sides, str):
                shutil.rmtree(self.state.options.out_dir / LOGS, ignore_errors=True)  # an earlier run's
        return self.sides

    def records(self, nodeid: str) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        """The records of ``nodeid`` measured so far, base and head, a process each (a round of turns:
        its runs)."""
        if self.sides is None or isinstance(self.sides, str):
            return [], []
        base, head = self.sides
        return list(base.records.get(nodeid, [])), list(head.records.get(nodeid, []))

    def amend(self, suspect: Suspect) -> None:
        """Keep ``suspect`` (judged already, its screen's comparison made since) in the evidence files
        in place of what it was judged as."""
        kept = self.kept.get(suspect.nodeid)
        if kept is not None:
            self.kept[suspect.nodeid] = (suspect.to_json(), *kept[1:])
            evidence.keep(self.state.options.out_dir, list(self.kept.values()))

    def close(self) -> None:
        tree = self.work / "base"
        if tree.exists() and getattr(self, "head_root", None) is not None:
            ab.remove_worktree(self.head_root, tree)
        shutil.rmtree(self.work, ignore_errors=True)

    def run(
        self, suspects: Sequence[Suspect], deciders: Mapping[str, Decider]
    ) -> dict[str, samehost.Decision]:
        """Rounds until every suspect is decided (or ``confirm_max_rounds``); decisions by node id."""
        sides = self.prepare()
        if isinstance(sides, str):
            return {s.nodeid: samehost.unsettled(s.screen.benchmark, sides) for s in suspects}
        base, head = sides
        call = self.calls
        self.calls += 1
        decided: dict[str, samehost.Decision] = {}
        why: dict[str, str] = {}
        pending = list(suspects)
        cfg = self.state.config
        names = {s.nodeid: s.screen.benchmark for s in suspects if s.kind == KERNEL}
        # whose forward changed: the screen's word first, then base and head's (verdict/neighbours.py)
        self.changed = {s.screen.benchmark: neighbours.screen_changed(s.baseline, s.measured)
                        for s in suspects if s.kind == KERNEL}  # fmt: skip
        for r in range(cfg.confirm_max_rounds):
            start = time.monotonic()
            # base, head, head, base, ...: each side first in every other round. The processes of a
            # round start together and wait, ready, until nothing else runs: then one measures, then
            # the other, since a start-up beside a measuring process moves its host side; the cold
            # starts' two take turns, process by process (plugin/standby.py). In each, the
            # configurations whose forward did not change come first: what runs before them is the
            # same code on both sides
            pending = neighbours.unchanged_first(pending, lambda s: s.screen.benchmark, self.changed)
            kernels = [s.nodeid for s in pending if s.kind != COLDSTART]
            colds = [s.nodeid for s in pending if s.kind == COLDSTART]
            if kernels:
                self.orders.append([s.screen.benchmark for s in pending if s.kind == KERNEL])
            # every process of the round starts now, together, and waits (plugin/standby.py): the
            # kernel benchmarks' pair, then the cold starts' pair
            pairs = []
            for ids, cold in ((kernels, False), (colds, True)):
                if ids:
                    folder = f"-{call}-{r}" + ("-cold" if cold else "")
                    children = [self._spawn(side, ids, self.work / (side.name + folder), cold)
                                for side in ab.order(sides, r)]  # fmt: skip
                    pairs.append((ids, cold, children))
            standby.await_ready([c for _, _, children in pairs for c in children], CHILD_TIMEOUT_S)
            spent = [f"start-up {time.monotonic() - start:.1f} s"]
            for ids, cold, children in pairs:
                if cold:  # both at once, taking turns process by process
                    began = time.monotonic()
                    for child in children:
                        standby.release(child.go, ids)
                    interleaved = standby.take_turns(children, CHILD_TIMEOUT_S)
                    problems = {c.name: standby.finish(c, CHILD_TIMEOUT_S) for c in children}
                    spent.append(f"cold starts {time.monotonic() - began:.1f} s"
                                 f"{' in turns' if interleaved else ''}")  # fmt: skip
                else:  # one after the other
                    interleaved, problems = False, {}
                    for child in children:
                        began = time.monotonic()
                        standby.release(child.go, ids)
                        problems[child.name] = standby.finish(child, CHILD_TIMEOUT_S)
                        spent.append(f"{child.name} {time.monotonic() - began:.1f} s")
                for child in children:
                    side = base if child.name == "base" else head
                    kind = ("cold" + (str(call) if call else "")) if cold else ""
                    standby.keep_log(child, self.state.options.out_dir / LOGS, r + 1, kind)
                    for s in pending:
                        if s.nodeid not in ids:
                            continue
                        path = record_file(child.out, s.nodeid)
                        if path.is_file():
                            record = json.loads(path.read_text("utf-8"))
                            if interleaved:  # the round's two orders are in its runs
                                record[TURNS_KEY] = True
                            side.records.setdefault(s.nodeid, []).append(record)
                        elif s.nodeid not in decided:
                            lost = problems[child.name] or (
                                f"the {side.name} side wrote no record of {s.nodeid} (see its log)"
                            )
                            decided[s.nodeid] = samehost.unsettled(s.screen.benchmark, lost)
            pending = [s for s in pending if s.nodeid not in decided]
            measured = neighbours.measured_changed(names, base.records, head.records)  # first records
            self.changed |= measured
            names = {node: name for node, name in names.items() if name not in measured}  # read once
            for s in pending:
                found = deciders[s.kind](s, base.records.get(s.nodeid, []), head.records.get(s.nodeid, []),
                                         r + 1 >= cfg.confirm_max_rounds)  # fmt: skip
                if isinstance(found, samehost.Decision):
                    decided[s.nodeid] = found
                else:
                    why[s.nodeid] = found  # what keeps it open
            pending = [s for s in pending if s.nodeid not in decided]
            # after each round: a run cut short keeps what it measured
            for s in suspects:
                self.kept[s.nodeid] = (s.to_json(), s.kind == KERNEL, base.records.get(s.nodeid, []),
                                       head.records.get(s.nodeid, []))  # fmt: skip
            evidence.keep(self.state.options.out_dir, list(self.kept.values()))
            still = ", ".join(s.screen.benchmark + (f" ({why[s.nodeid]})" if why.get(s.nodeid) else "")
                              for s in pending)  # fmt: skip
            self.log(f"kernelgate: same-host round {r + 1}: {time.monotonic() - start:.1f} s "
                     f"({', '.join(spent)}), {len(pending)} suspect(s) still open"
                     f"{': ' + still if still else ''}")  # fmt: skip
            if not pending:
                break
        for s in pending:
            decided[s.nodeid] = samehost.unsettled(
                s.screen.benchmark, f"not settled after {cfg.confirm_max_rounds} round(s) per side"
            )
        return decided


# the decision, or what keeps the suspect open ("" where nothing more is known)
Decider = Callable[[Suspect, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]], bool],
                   "samehost.Decision | str"]  # fmt: skip
