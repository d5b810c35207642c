"""kernelgate bisect on a synthetic git history of 16 commits where commit k slows a layer by 3 %: a
fake judge (the layer's time read from the commit's speed.txt against GOOD's) stands in for the
same-host A/B; the bisection names k in at most ceil(log2 16) + 1 judge runs, goes on after a crash
or a time box, and prints its plan with --dry-run. A step at a host change is not bisected."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from history_nights import git_history, nights

from kernelgate import cli
from kernelgate.history import bisect, changes, command
from kernelgate.history.bisect import Outcome, Verdict


class FileJudge:
    """Reads ``speed.txt`` at both commits: bad over +2 %, the size the ratio less one."""

    def __init__(self, repo: Path, crash_after: int | None = None, unclear: set[str] | None = None) -> None:
        self.repo, self.crash_after, self.unclear = repo, crash_after, unclear or set()
        self.runs: list[str] = []

    def speed(self, commit: str) -> float:
        done = subprocess.run(
            ["git", "show", f"{commit}:speed.txt"], cwd=self.repo, capture_output=True, text=True, check=True
        )
        return float(done.stdout)

    def __call__(self, good: str, commit: str, work: Path) -> Outcome:
        if self.crash_after is not None and len(self.runs) >= self.crash_after:
            raise RuntimeError("the runner went away")
        self.runs.append(commit)
        if commit in self.unclear:
            return Outcome(Verdict.UNCLEAR, None, "inconclusive")
        size = self.speed(commit) / self.speed(good) - 1.0
        return Outcome(Verdict.BAD if size > 0.02 else Verdict.GOOD, size, f"{size:+.2%}")


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, list[str]]]:
    made = {}
    for k in (1, 5, 8, 11, 16):
        repo = tmp_path_factory.mktemp(f"k{k}")
        made[k] = (repo, git_history(repo, 16, k))
    return made


@pytest.mark.parametrize("k", [1, 5, 8, 11, 16])
def test_bisect_names_commit_k_in_log2_n_judge_runs(
    k: int, histories: dict[int, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    repo, shas = histories[k]
    plan = bisect.plan(repo, shas[0], shas[-1], "speed.txt")
    assert plan.commits == tuple(shas[1:]) and plan.expected_runs == 4 == math.ceil(math.log2(16))
    judge = FileJudge(repo)
    result = bisect.bisect(plan, judge, tmp_path, log=lambda line: None)
    assert result.status is bisect.Status.FOUND and result.culprit == shas[k]
    assert result.size == pytest.approx(0.03)
    assert result.runs <= plan.expected_runs + 1 <= 5
    assert f"first bad commit {shas[k][:12]} (change {k} (slows model.9)), +3.0%" in result.headline()
    state = json.loads((tmp_path / bisect.STATE).read_text())
    assert state["result"]["culprit"] == shas[k] and len(state["steps"]) == result.runs


def test_a_crashed_bisection_goes_on_where_it_stopped(
    histories: dict[int, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    repo, shas = histories[11]
    plan = bisect.plan(repo, shas[0], shas[-1], "speed.txt")
    with pytest.raises(RuntimeError, match="went away"):
        bisect.bisect(plan, FileJudge(repo, crash_after=2), tmp_path, log=lambda line: None)
    assert len(json.loads((tmp_path / bisect.STATE).read_text())["steps"]) == 2
    judge, lines = FileJudge(repo), []
    result = bisect.bisect(plan, judge, tmp_path, log=lines.append)
    assert result.culprit == shas[11] and len(judge.runs) == result.runs - 2
    assert "going on from" in lines[0]
    with pytest.raises(bisect.BisectError, match=r"state of another bisection.*rm "):
        bisect.bisect(bisect.plan(repo, shas[1], shas[-1], "x"), judge, tmp_path)


def test_a_time_boxed_bisection_stops_with_the_range_left_and_resumes(
    histories: dict[int, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    repo, shas = histories[5]
    plan = bisect.plan(repo, shas[0], shas[-1], "speed.txt")
    ticks = iter(range(1000))
    result = bisect.bisect(
        plan, FileJudge(repo), tmp_path, deadline=4.0, clock=lambda: float(next(ticks)), log=lambda line: None
    )
    assert result.status is bisect.Status.UNFINISHED and result.culprit is None
    assert (
        shas[5] in plan.commits[result.low : result.high + 1]
        and "run the same command again" in result.headline()
    )
    assert bisect.bisect(plan, FileJudge(repo), tmp_path, log=lambda line: None).culprit == shas[5]


def test_an_unsettled_commit_is_measured_again_then_stops_the_bisection(
    histories: dict[int, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    repo, shas = histories[5]
    plan = bisect.plan(repo, shas[0], shas[-1], "speed.txt")
    judge = FileJudge(repo, unclear={shas[8]})  # the first midpoint: commit 8
    result = bisect.bisect(plan, judge, tmp_path, log=lambda line: None)
    assert result.status is bisect.Status.UNCLEAR and judge.runs == [shas[8], shas[8]]
    assert "could not settle" in result.headline()


def test_good_equal_to_bad_is_not_the_code(
    histories: dict[int, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    repo, shas = histories[5]
    result = bisect.bisect(bisect.plan(repo, shas[3], shas[3], "x"), FileJudge(repo), tmp_path)
    assert result.status is bisect.Status.EMPTY and result.runs == 0 and "not the code's" in result.headline()


def test_dry_run_prints_the_plan(
    histories: dict[int, tuple[Path, list[str]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, shas = histories[8]
    monkeypatch.chdir(repo)
    assert (
        cli.main(["bisect", "--dry-run", shas[0], shas[-1], "--", "benchmarks", "-k", "yolov8n-fp16-bs1-640"])
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "16 commit(s)" in out
        and "4 judge run(s) (ceil(log2 16))" in out
        and "benchmarks -k yolov8n-fp16-bs1-640" in out
    )
    assert all(sha[:12] in out for sha in shas[1:]) and not (repo / ".kernelgate").exists()
    assert cli.main(["bisect", "--dry-run", shas[-1], shas[0]]) == 2  # BAD before GOOD
    assert "no ancestor" in capsys.readouterr().err


def test_the_nightly_path_bisects_the_code_change_and_not_the_host_change(
    histories: dict[int, tuple[Path, list[str]]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Nights of the 16 commits: the code step from commit 5, a driver change at night 11 that slows
    another configuration; only the first is bisected, and the bisection is kept for the next night."""
    pytest.importorskip("otava")
    from kernelgate.config import load_pyproject

    repo, shas = histories[5]
    root = Path(__file__).parent.parent
    commits = [shas[0]] * 8 + shas  # eight nights of GOOD, then one night per commit
    history = nights(
        len(commits),
        commits=commits,
        step=("yolov8n-fp16-bs1-640", "model.9", 8 + 5, 1.03),
        host_change_at=8 + 11,
        more=[("yolo11n-fp16-bs1-640", "model.2", 8 + 11, 1.05)],
    )
    found = changes.find(history, load_pyproject(root / "pyproject.toml")[0])
    code = [c for c in found if not c.runner]
    runner = [c for c in found if c.runner]
    assert [(c.benchmark, c.figure, c.first_bad.commit) for c in code] == [
        ("yolov8n-fp16-bs1-640", "model.9", shas[5])
    ]
    assert [(c.benchmark, c.figure) for c in runner] == [("yolo11n-fp16-bs1-640", "model.2")]
    file = tmp_path / "changes.json"
    file.write_text(json.dumps([c.to_json() for c in found]))
    judges: list[FileJudge] = []

    def fake(args: object, pytest_args: list[str], benchmark: str | None, figure: str | None) -> FileJudge:
        assert (
            pytest_args == ["benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"]
            and figure == "model.9"
        )
        judges.append(FileJudge(repo))
        return judges[-1]

    monkeypatch.setattr(command, "_judge", fake)
    monkeypatch.chdir(repo)
    keep, out = tmp_path / "history", tmp_path / "out"
    argv = ["bisect", "--changes", str(file), "--history", str(keep), "--out", str(out), "--minutes", "5"]
    assert cli.main(argv) == 0
    (result,) = json.loads((out / "results.json").read_text()).values()
    assert result["culprit"] == shas[5] and result["runs"] <= 5
    assert cli.main(argv) == 0 and len(judges) == 1  # the next night: kept, not measured again
    pub = tmp_path / "pub"
    assert (
        cli.main(
            [
                "history",
                "publish",
                str(file),
                "--bisections",
                str(out / "results.json"),
                "--dir",
                str(keep),
                "--out",
                str(pub),
            ]
        )
        == 0
    )
    issues = [json.loads(p.read_text()) for p in sorted((pub / "issues").glob("*.json"))]
    titles = sorted(i["title"] for i in issues)
    assert any(
        f"yolov8n-fp16-bs1-640 model.9 +3.0% on sm90-nvidia-h200: first bad commit {shas[5][:12]}" in t
        for t in titles
    )
    assert any("yolo11n-fp16-bs1-640 model.2" in t and "the runner (a host change" in t for t in titles)
    assert all(i["body"].startswith(f"<!-- kernelgate-change: {i['key']} -->") for i in issues)
    assert "first bad commit" in (pub / "summary.md").read_text()
