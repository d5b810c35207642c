"""The same-host judge of a cold start: each side's rounds (one pytest process each, its runs fresh
processes) pooled, and the median of each round tested as the unit of replication.

Synthetic records shaped like the A/A run on H100 host 5c7476c4 (2026-11-26): ``import torch`` about
3.0 s, 2 runs a round; that run failed the same code at +41 % on the head side over 3 rounds pooled.
"""

from __future__ import annotations

import random
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.phases import ChildSpec, ColdStart, Run
from kernelgate.config import GateConfig
from kernelgate.plugin.deciders import decide_coldstart
from kernelgate.plugin.samehost import COLDSTART, TURNS_KEY, Suspect
from kernelgate.verdict import bimodal
from kernelgate.verdict.compare import Verdict, noise_aware_rule
from kernelgate.verdict.samehost import Outcome

SPEC = ChildSpec("yolov8n", "fp16", 1, 640, "cuda", 50)
CONFIG = GateConfig()


def record(import_torch_ms: list[float], seed: int) -> ColdStart:
    """One round's process: its runs, ``import torch`` as given, the other phases steady."""
    rng = random.Random(seed)

    def jitter(ms: float) -> float:
        return ms * (1 + rng.uniform(-0.01, 0.01))

    runs = tuple(
        Run({"startup": jitter(100.0), "import_torch": t, "cuda_init": jitter(150.0), "build": jitter(90.0),
             "first_inference": jitter(400.0)}, 4000.0, 0)
        for t in import_torch_ms
    )  # fmt: skip
    return ColdStart(SPEC, "empty", "sm90-nvidia-h100-80gb-hbm3", {}, runs, {"torch": "2.11.0+cu130"})


def side(rounds: list[list[float]], seed: int) -> list[dict[str, Any]]:
    return [record(r, seed + i).to_json() for i, r in enumerate(rounds)]


BASE = [[3000.0, 3030.0], [3010.0, 2990.0], [3020.0, 3005.0]]


def decide(base: list[dict[str, Any]], head: list[dict[str, Any]], final: bool = False) -> Any:
    first = ColdStart.from_json(base[0])
    screen = coldverdict.compare_scenario(first, ColdStart.from_json(head[0]), CONFIG)
    suspect = Suspect("benchmarks/test_coldstart.py::test_coldstart[x]", COLDSTART, screen, first.to_json())
    decider = decide_coldstart(cast(Any, SimpleNamespace(config=CONFIG)))
    return decider(suspect, base, head, final)


def test_a_slowdown_in_every_round_is_a_regression() -> None:
    head = side([[4250.0, 4280.0], [4230.0, 4300.0], [4260.0, 4240.0]], seed=10)
    found = decide(side(BASE, 0), head)
    assert found.outcome is Outcome.REGRESSION and "import_torch +41" in found.reason


def test_a_slow_stretch_of_the_runner_in_some_rounds_decides_nothing_alone() -> None:
    # two of three head rounds slow: pooled, the runs say "regressed"; the round medians do not agree
    head = side([[4250.0, 4280.0], [4230.0, 4300.0], [3100.0, 3120.0]], seed=10)
    b = [ColdStart.from_json(r) for r in side(BASE, 0)]
    h = [ColdStart.from_json(r) for r in head]
    # the runs pooled with no rounds kept (the judge before 2026-11-26): "regressed"
    flat_b = replace(b[0], runs=tuple(run for r in b for run in r.runs))
    flat_h = replace(h[0], runs=tuple(run for r in h for run in r.runs))
    pooled = coldverdict.compare_scenario(flat_b, flat_h, CONFIG, judge=noise_aware_rule)
    assert Verdict.REGRESSED in {d.verdict for d in pooled.deltas if d.name == "import_torch"}
    found = decide(side(BASE, 0), head)
    assert isinstance(found, str) and "import_torch" in found  # more rounds
    assert decide(side(BASE, 0), head, final=True).outcome is Outcome.INCONCLUSIVE  # never a pass


def test_the_same_code_passes_after_a_round_in_each_order() -> None:
    head = side([[3015.0, 2995.0], [3005.0, 3025.0]], seed=10)
    assert decide(side(BASE[:1], 0), head[:1]) == "a round in each order first (2)"
    assert decide(side(BASE[:2], 0), head).outcome is Outcome.PASS


def test_compare_rounds_keeps_the_rounds_of_each_side() -> None:
    b = [ColdStart.from_json(r) for r in side(BASE, 0)]
    ab = coldverdict.compare_rounds(b, b, CONFIG)
    assert all(d.verdict is Verdict.UNCHANGED for d in ab.deltas)
    one = coldverdict.compare_scenario(b[0], b[0], CONFIG)
    assert [d.name for d in one.deltas] == [d.name for d in ab.deltas]


def test_the_evidence_file_keeps_each_run_of_each_round() -> None:
    from kernelgate.plugin import evidence

    row = evidence.coldstart_row("n", "b", {"base": side(BASE[:2], 0), "head": side(BASE[:2], 5)})
    assert [r["first"] for r in row["base"]] == [True, False]
    assert [r["first"] for r in row["head"]] == [False, True]
    assert [run["import_torch"] for run in row["base"][1]["runs_ms"]] == [3010.0, 2990.0]


# ``import torch`` of each run (ms), round by round, of the empty-cache cold start in an A/A run on
# H100 host 1ecb034c (2026-11-26, samehost.json): the runner's CPUs at two speeds, both sides
AA_BASE = [[3616.3, 3245.9], [3627.2, 4197.3], [3518.4, 4222.8], [4939.2, 4375.3]]
AA_HEAD = [[3591.9, 4230.9], [4604.7, 4325.8], [3979.8, 3536.7], [3157.4, 4216.5]]


def test_the_runners_two_speeds_settle_a_cold_start_once_the_base_shows_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, head = side(AA_BASE, 0), side(AA_HEAD, 10)
    # two rounds: the base's own runs spread 3246 … 4197 ms (two speeds), the head's typical run (4278)
    # is within the limit of its slowest, and the fastest of each agree (+10.7 %)
    found = decide(base[:2], head[:2])
    assert found.outcome is Outcome.PASS, found
    assert "import_torch: the processes of both sides ran at different speeds" in found.reason
    with monkeypatch.context() as m:  # without the rule: grey at the third round (the run went to 4)
        m.setattr(bimodal, "explained", lambda *args: None)
        assert isinstance(decide(base[:2], head[:2]), str)
        assert isinstance(decide(base[:3], head[:3]), str)
    # a base without two speeds (its runs within 1 %) explains nothing: open
    steady = side([[3250.0, 3260.0], [3255.0, 3245.0]], 0)
    assert isinstance(decide(steady, head[:2]), str)
    # a head 40 % slower in every run, its fastest too, is not the runner
    slow = side([[t * 1.4 for t in r] for r in AA_HEAD[:3]], 10)
    assert decide(base[:3], slow).outcome is Outcome.REGRESSION


def turns(side_records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records of rounds whose sides took turns run by run (plugin/standby.py)."""
    return [{**r, TURNS_KEY: True} for r in side_records]


def test_one_round_of_turns_holds_both_orders_and_passes_the_same_code() -> None:
    base = turns(side([[3000.0, 3030.0, 3010.0]], 0))
    head = turns(side([[3015.0, 2995.0, 3005.0]], 10))
    assert decide(base, head).outcome is Outcome.PASS
    # the same runs from rounds one side after the other: a round in each order first
    plain = side([[3000.0, 3030.0, 3010.0]], 0), side([[3015.0, 2995.0, 3005.0]], 10)
    assert decide(*plain) == "a round in each order first (2)"


def test_a_slowdown_in_rounds_of_turns_is_a_regression_each_run_a_process() -> None:
    head = turns(side([[4250.0, 4280.0, 4230.0], [4300.0, 4260.0, 4240.0]], seed=10))
    base = turns(side([[3000.0, 3030.0, 3010.0], [2990.0, 3020.0, 3005.0]], 0))
    found = decide(base, head)
    assert found.outcome is Outcome.REGRESSION and "import_torch +41" in found.reason
    # one round of three runs a side: the Mann-Whitney test cannot reach alpha yet
    assert isinstance(decide(base[:1], head[:1]), str)


def test_two_slow_runs_of_six_in_rounds_of_turns_are_no_regression() -> None:
    # a slow stretch of the runner over two of the head's six runs: each run is a process, and the
    # process test does not bear the pooled runs out
    head = turns(side([[4250.0, 3010.0, 3020.0], [4280.0, 2995.0, 3000.0]], seed=10))
    base = turns(side([[3000.0, 3030.0, 3010.0], [2990.0, 3020.0, 3005.0]], 0))
    found = decide(base, head)
    assert isinstance(found, str) or found.outcome is not Outcome.REGRESSION


@pytest.mark.parametrize(("policy", "fails"), [("fail", True), ("warn", False)])
def test_a_cold_start_the_judge_left_in_doubt_fails_its_test_where_on_inconclusive_says(
    policy: str, fails: bool
) -> None:
    """The test's outcome is the verdict: a cold start left inconclusive fails its test (the merged
    comparison) under on_inconclusive = "fail", as the run's exit status does; before, its comparison
    failed on REGRESSED alone, and pytest counted a pass in a run that exited 1."""
    from kernelgate.config import Policy
    from kernelgate.verdict import reported, samehost

    config = replace(CONFIG, on_inconclusive=Policy(policy))
    head = side([[4250.0, 4280.0], [4230.0, 4300.0], [3100.0, 3120.0]], seed=10)
    first = ColdStart.from_json(side(BASE, 0)[0])
    screen = coldverdict.compare_scenario(first, ColdStart.from_json(head[0]), config)
    doubt = samehost.unsettled(screen.benchmark, "not settled after 6 round(s) per side")
    merged = reported.merged(screen, doubt)
    assert merged.failed is fails
    assert any(d.verdict is Verdict.INCONCLUSIVE for d in merged.deltas)


def test_a_cold_start_phase_is_answered_in_seconds_and_a_move_down_is_not_over_its_limit() -> None:
    """The answer to a flagged phase, as an H100 A/A printed it (2026-12-07, host a1329bb6): "base ->
    head on this runner 1111544.0 µs -> 719199.0 µs (-35.3 %), limit +277886.0 µs: over its limit but
    inside the noise" for a phase 35 % faster: now in seconds, and said to be faster."""
    from kernelgate.config import Scope, Threshold
    from kernelgate.verdict import reported, samehost
    from kernelgate.verdict.delta import Comparison, Delta

    limit = Threshold(0.25, 250000.0)

    def build(base: float, head: float, verdict: Verdict) -> Delta:
        return Delta(Scope.PHASE, "build", "empty", base, head, limit, verdict)

    screen = Comparison("coldstart-x", "sm90", (build(107000.0, 719199.0, Verdict.REGRESSED),), frozenset())
    ab = Comparison("coldstart-x", "sm90", (build(1111544.0, 719199.0, Verdict.AMBIGUOUS),), frozenset())
    processes = {(Scope.PHASE, "build"): ((1111544.0, 1090000.0, 1200000.0), (719199.0, 700000.0, 730000.0))}
    decision = samehost.Decision("coldstart-x", samehost.Outcome.PASS, "agree", ab, 3, processes=processes)
    (line,) = reported.answers([(Scope.PHASE, "build")], screen, decision)
    assert line == (
        "  build: stored baseline 107.0 ms -> 719.2 ms (+572.1 %); base -> head on this runner 1.112 s -> "
        "719.2 ms (-35.3 %), limit +277.9 ms: faster by more than its limit but inside the noise of this "
        "runner (each process: base 1.112 1.090 1.200 | head 0.7192 0.7000 0.7300 s)"
    )


def twin_session(records: tuple[list[dict[str, Any]], list[dict[str, Any]]], early: bool = True) -> Any:
    """A session in which the empty-cache cold start of SPEC was judged with ``records`` (base, head)."""
    from kernelgate.plugin.coldstart import ANOTHER_HOST

    nodeid = "benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-empty]"
    first = ColdStart.from_json(records[0][0])
    screen = coldverdict.compare_scenario(first, first, CONFIG)
    suspect = Suspect(nodeid, COLDSTART, screen, first.to_json(), ANOTHER_HOST)
    judge = SimpleNamespace(records=lambda n: records if n == nodeid else ([], []))
    state = SimpleNamespace(judge=judge, suspects=[suspect], early={nodeid: object()} if early else {})
    return SimpleNamespace(state=state, node=SimpleNamespace(nodeid=nodeid.replace("empty", "warm")))


def with_cache(side_records: list[dict[str, Any]], cache_bytes: int) -> list[dict[str, Any]]:
    return [
        replace(r, runs=tuple(replace(run, cache_bytes=cache_bytes) for run in r.runs)).to_json()
        for r in (ColdStart.from_json(raw) for raw in side_records)
    ]


def test_a_warm_cold_start_repeats_its_judged_twin_only_where_the_twin_compiled_nothing() -> None:
    from kernelgate.coldstart.scenarios import SCENARIOS
    from kernelgate.plugin.coldstart import repeats_twin

    warm = SCENARIOS["warm"]
    base, head = with_cache(side(BASE, 1), 3988), with_cache(side(BASE, 2), 3988)
    said = repeats_twin(twin_session((base, head)), SPEC, warm, {})
    assert said is not None and said.startswith("not measured: a warm cache holds nothing to reuse")
    assert "whose 12 runs of base and head each left the CUDA JIT cache with no compiled kernel" in said
    assert "(at most 3988 bytes); that one's verdict answers for both" in said
    assert said.endswith("pytest 'benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-warm]'")
    # measured in full where the twin's processes compiled a kernel into the cache (a GPU newer than
    # the build: PTX JIT), in one run of one side
    compiled = with_cache(side(BASE[:1], 2), 200_000) + head[1:]
    assert repeats_twin(twin_session((base, compiled)), SPEC, warm, {}) is None
    # ... where the twin was not judged at its test's time, or not of the same spec or variables
    assert repeats_twin(twin_session((base, head), early=False), SPEC, warm, {}) is None
    assert repeats_twin(twin_session((base, head)), replace(SPEC, precision="fp32"), warm, {}) is None
    assert repeats_twin(twin_session((base, head)), SPEC, warm, {"CUDA_MODULE_LOADING": "EAGER"}) is None
    # ... under torch.compile (a warm start reuses Inductor's caches), or for a scenario with no twin
    assert repeats_twin(twin_session((base, head)), replace(SPEC, mode="compile"), warm, {}) is None
    assert repeats_twin(twin_session((base, head)), SPEC, SCENARIOS["small-cache"], {}) is None
    # ... or where a run of the twin failed
    broken = ColdStart.from_json(head[0])
    failed = [replace(broken, runs=(replace(broken.runs[0], error="boom"), *broken.runs[1:])).to_json()]
    assert repeats_twin(twin_session((base, failed)), SPEC, warm, {}) is None
