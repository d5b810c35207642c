"""Rounds of a baseline that disagree: refused when saved, no yardstick when compared, and never the
noise that mutes a verdict (kernelgate.baseline.rounds, kernelgate.verdict.yardstick)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, META, V8, entry, measurement

from kernelgate import config
from kernelgate.baseline import rounds
from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME, BaselineError
from kernelgate.config import ConfigError, GateConfig, Threshold
from kernelgate.measure.results import Dist, combine
from kernelgate.verdict import yardstick
from kernelgate.verdict.compare import Verdict, noise_aware_rule

REPO = Path(__file__).resolve().parents[1]


def layer(us: float) -> Any:
    return measurement({"model.0": us}, {"model.0.conv :: gemm": us})


def noisy(center: float, n: int = 20, seed: int = 0) -> Dist:
    rng = random.Random(seed)
    return Dist(tuple(round(center * (1 + rng.uniform(-0.005, 0.005)), 3) for _ in range(n)))


# --- the verdict's noise ------------------------------------------------------------------------


def test_one_outlier_round_is_not_the_noise_that_mutes_a_regression() -> None:
    """Rounds at 100, 100.3 and 80 µs (the last within round_tolerance); now 115 µs (+15 %). The
    spread of all rounds (20 µs) would call the +15 % noise; the majority's (0.3 µs) does not."""
    base = Dist.concat([noisy(100, seed=1), noisy(100.3, seed=2), noisy(80, seed=3)])
    judgement = noise_aware_rule(base, noisy(115, seed=4), Threshold(0.025, 0.5))
    assert judgement.verdict is Verdict.REGRESSED
    assert judgement.noise_pct is not None and judgement.noise_pct < 1.0


def test_the_majority_spread_ignores_one_round_of_three_and_two_of_five() -> None:
    def spread(*medians: float) -> float:
        return rounds.majority_spread(Dist.concat([Dist((m,)) for m in medians]), 100.0)

    assert spread(100.0) == 0.0
    assert spread(100.0, 104.0) == 4.0  # two rounds: no majority without both
    assert spread(100.0, 101.0, 100000.0) == 1.0
    assert spread(99.0, 100.0, 102.0, 5000.0, 0.0) == 2.0


# --- the yardstick --------------------------------------------------------------------------------


def outlier_baseline() -> Any:
    """Three rounds of one benchmark, the third x1000 (recorded while something else ran)."""
    return entry(V8, combine([layer(100.0), layer(100.0), layer(100000.0)]))


def test_a_baseline_round_x1000_makes_it_no_yardstick_instead_of_a_pass() -> None:
    base, current = outlier_baseline(), layer(5480.0)  # +5380 %
    problems = yardstick.pair_problems(base, current, GateConfig())
    assert problems[0].startswith(
        "the baseline's rounds disagree beyond what noise explains (total: round 3 of 3 took 100.0 ms, "
        "the median round 100.0 µs (+99900 %; noise explains 25.0 µs); layer model.0: round 3 of 3"
    )
    message = yardstick.refusal(current.benchmark, "baselines/x/0001_kernelgate.json", problems, "b.py::t")
    assert "re-record it on this machine: pytest b.py::t --kernelgate-save" in message


def test_kernelgate_compare_refuses_a_baseline_whose_rounds_disagree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernelgate import cli

    base = baseline.path_for(tmp_path, ARCH)
    baseline.write_atomic(base, baseline.dumps(baseline.document([outlier_baseline()], ARCH, **META)))
    current = tmp_path / "current.json"
    baseline.write_atomic(
        current, baseline.dumps(baseline.document([entry(V8, layer(5480.0))], ARCH, **META))
    )
    code = cli.main(["compare", str(base), str(current), "--config", str(tmp_path / "none.toml")])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("yolov8n-fp16-bs1-640: not compared: the baseline's rounds disagree beyond what")
    assert "pass" not in out


def test_a_kept_round_is_a_yardstick_and_the_kept_reason_travels_with_the_entry() -> None:
    kept = entry(V8, outlier_baseline().measurement)
    kept = baseline.Entry(
        V8, kept.measurement, rounds.keeping(kept.benchmark, [3], "a training job shared the GPU")
    )
    assert rounds.kept_rounds(kept.benchmark) == {3: "a training job shared the GPU"}
    assert yardstick.pair_problems(kept, layer(100.0), GateConfig()) == []
    again = baseline.Entry.from_json(json.loads(json.dumps(kept.to_json())))  # a pytest-xdist worker's
    assert rounds.kept_rounds(again.benchmark) == {3: "a training job shared the GPU"}
    # a round kept for another one's reason is still refused
    other = baseline.Entry(V8, kept.measurement, rounds.keeping(outlier_baseline().benchmark, [2], "x"))
    assert "round 3 of 3" in yardstick.pair_problems(other, layer(100.0), GateConfig())[0]


def test_rounds_within_the_tolerance_or_the_floor_agree() -> None:
    m = combine([layer(100.0), layer(110.0), layer(124.0)])  # 124 is 12.7 % from the median round
    assert rounds.disagreements(m, GateConfig()) == []
    one = measurement({"model.0": 1.0})
    tiny = combine([one, one, measurement({"model.0": 1.4})])
    assert rounds.disagreements(tiny, GateConfig()) == []  # +40 % but +0.4 µs: under the 0.5 µs floor
    strict = GateConfig(round_tolerance=0.05)  # 5.5 µs of the median round (110 µs)
    assert [(d.figure, d.round) for d in rounds.disagreements(m, strict)] == [
        ("total", 1),
        ("total", 3),
        ("layer model.0", 1),
        ("layer model.0", 3),
        ("kernel model.0.conv :: gemm", 1),
        ("kernel model.0.conv :: gemm", 3),
    ]
    floors = GateConfig(round_tolerance=0.05, floor_us=20.0, kernel_floor_us=20.0)
    assert rounds.disagreements(m, floors) == []  # 14 µs: under a 20 µs floor


@pytest.mark.parametrize("path", sorted(REPO.glob(f"baselines/*/{FILE_NAME}")), ids=lambda p: p.parent.name)
def test_the_committed_baselines_have_rounds_that_agree(path: Path) -> None:
    gate, _ = config.load_pyproject(REPO / "pyproject.toml")
    for item in baseline.load(path).values():
        assert rounds.disagreements(item.measurement, gate, rounds.kept_rounds(item.benchmark)) == []


# --- refused when saved ---------------------------------------------------------------------------


def save(path: Path, us: float, **kwargs: Any) -> list[str]:
    return baseline.save(path, [entry(V8, layer(us))], arch=ARCH, append=True, **META, **kwargs)


def test_an_appended_round_that_disagrees_is_refused_with_the_numbers_and_the_fixes(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    assert save(path, 100.0) == [] and save(path, 101.0) == []
    before = path.read_text()
    with pytest.raises(BaselineError) as info:
        save(path, 100000.0)
    message = str(info.value)
    assert message.startswith(
        f"{path}: nothing was saved: yolov8n-fp16-bs1-640: round(s) 3 disagree with the others beyond what "
        "noise explains (total: round 3 of 3 took 100.0 ms, the median round 101.0 µs (+98910 %; "
        "noise explains 25.2 µs);"
    )
    assert f"add a round with pytest '{V8}' --kernelgate-save --kernelgate-append (" in message
    assert f"kernelgate record --rounds 3 -- '{V8}'" in message
    assert "--kernelgate-keep-round 'REASON'" in message and "round_tolerance" in message
    assert info.value.replaceable is False
    assert path.read_text() == before  # nothing lost, nothing added


def test_of_two_rounds_the_slower_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    save(path, 100.0)
    save(path, 124.0, keep_round="unused: within the tolerance")  # +24 %: agrees
    path.unlink()
    save(path, 100.0)
    with pytest.raises(
        BaselineError, match=r"round\(s\) 2 disagree .*round 2 of 2 took 100.0 ms, the other "
    ):
        save(path, 100000.0)


def test_a_disagreeing_round_is_kept_when_the_user_says_why(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    save(path, 100.0)
    save(path, 100.0)
    notes = save(path, 100000.0, keep_round="the GPU was shared with a training job")
    assert notes[0].startswith(
        "yolov8n-fp16-bs1-640: kept round(s) [3] (the GPU was shared with a training job)"
    )
    (kept,) = baseline.load(path, ARCH).values()
    assert kept.benchmark["extra_info"]["kernelgate_kept_rounds"] == [
        {"reason": "the GPU was shared with a training job", "round": 3}
    ]
    assert kept.measurement.total.rounds == (5, 5, 5)
    assert save(path, 100.0) == []  # a fourth round that agrees: the kept one stays kept
    (four,) = baseline.load(path, ARCH).values()
    assert rounds.kept_rounds(four.benchmark) == {3: "the GPU was shared with a training job"}


def test_a_malformed_list_of_kept_rounds_is_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    save(path, 100.0)
    data = json.loads(path.read_text())
    data["benchmarks"][0]["extra_info"]["kernelgate_kept_rounds"] = [{"round": 0, "reason": ""}]
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=r"benchmarks\[0\] is malformed \(ValueError: .*round 0"):
        baseline.load(path)


def test_round_tolerance_is_read_from_the_configuration() -> None:
    assert GateConfig().round_tolerance == 0.25
    assert config.from_table({"round_tolerance": "10%"}, "t", Path(".")).round_tolerance == 0.10
    with pytest.raises(ConfigError, match="round_tolerance = 'lots' is not a percentage"):
        config.from_table({"round_tolerance": "lots"}, "t", Path("."))


def test_the_input_copy_moving_between_processes_is_no_disagreement() -> None:
    """The input H2D copy of the same code was 47.2 µs in one H100 process and 61.6 µs in the next
    (2026-11-25): host-coupled, judged on one host, not a reason to refuse a round. A device-side
    layer moving as much still is."""
    copies = combine(
        [measurement({"input": c, "model.0": 100.0}, {"input :: Memcpy HtoD": c}) for c in (47.2, 61.6)]
    )
    assert rounds.disagreements(copies, GateConfig()) == []
    layers = combine([measurement({"input": 47.0, "model.0": c}) for c in (100.0, 130.0)])
    assert [d.figure for d in rounds.disagreements(layers, GateConfig())] == ["layer model.0"]
