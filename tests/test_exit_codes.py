"""The exit statuses of the table in docs/silent-pass.md ("Exit statuses"), each row by a test named in
the table: the ``kernelgate`` command's here, the pytest run's where the table names them. Bad input
never shows a traceback; an internal error keeps its traceback in a file and prints the command to
reproduce it."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest
from test_cli_compare_exit import BASE, SLOWED, judged

from kernelgate import cli, exits

ROOT = Path(__file__).parent.parent
TABLE = ROOT / "docs" / "silent-pass.md"


def kernelgate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_pass_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = kernelgate(capsys, "compare", str(BASE), str(BASE), "--config", config(tmp_path, ""))
    assert code == exits.PASS == 0, out


def test_regression_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = kernelgate(capsys, "compare", str(BASE), str(SLOWED), "--config", config(tmp_path, ""))
    assert code == exits.FAILED == 1
    assert "REGRESSED model.2 C2f" in out


def test_inconclusive_exits_1_or_0_with_warn(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    current = str(judged(tmp_path, "inconclusive"))
    code, out, _ = kernelgate(capsys, "compare", str(BASE), current, "--config", config(tmp_path, ""))
    assert code == 1 and "inconclusive" in out
    warn = config(tmp_path, '[tool.kernelgate]\non_inconclusive = "warn"\n')
    code, out, _ = kernelgate(capsys, "compare", str(BASE), current, "--config", warn)
    assert code == 0, out


BAD_INPUTS = {
    "missing file": (["compare", "/nonexistent/base.json", str(BASE)], "cannot be read"),
    "not JSON": (["compare", "{bad}", str(BASE)], "not valid JSON"),
    "a folder": (["groups", "{folder}"], "is a folder"),
    "wrong option": (["compare", "--bogus", str(BASE), str(BASE)], "unrecognized arguments: --bogus"),
    "unknown command": (["frobnicate"], "invalid choice: 'frobnicate'"),
    "bad configuration": (["report", str(BASE), str(BASE), "--config", "{config}"], "ambiguous"),
    "bad --env": (["coldstart", "--env", "NOVALUE"], "expected KEY=VALUE"),
    "bad --rounds": (["record", "--rounds", "0"], "give 1 or more"),
    "report merge of nothing there": (["report", "merge", "/nonexistent/report"], "cannot be read"),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_exits_2_with_a_line_and_no_traceback(
    case: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    bad_config = tmp_path / "bad.toml"
    bad_config.write_text('[tool.kernelgate]\nlayer_threshold = "5"\n', encoding="utf-8")
    argv, expected = BAD_INPUTS[case]
    argv = [a.format(bad=tmp_path / "bad.json", folder=tmp_path / "folder", config=bad_config) for a in argv]
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2 through SystemExit
        code = exc.code
    out, err = capsys.readouterr()
    assert code == exits.USAGE == 2, out + err
    assert expected in out + err
    assert "Traceback" not in out + err
    assert not (tmp_path / ".kernelgate" / "crash").exists()


def test_internal_error_exits_3_with_the_report_path_and_the_command_to_reproduce(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_arch", broken)
    code = cli.main(["arch", "--cpu", "--baseline-dir", "my baselines"])
    assert code == cli.INTERNAL_ERROR == exits.INTERNAL_ERROR == 3  # never 1 (a verdict) or 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "kernelgate arch: internal error (ZeroDivisionError: division by zero)" in err
    assert "is not a verdict" in err
    assert "To reproduce: kernelgate arch --cpu --baseline-dir 'my baselines'." in err
    (report,) = (tmp_path / ".kernelgate" / "crash").glob("arch-*.txt")
    assert f"the traceback is in {report}" in err
    text = report.read_text()
    assert "Traceback" in text and "ZeroDivisionError" in text and "in broken" in text
    assert "command: kernelgate arch --cpu --baseline-dir 'my baselines'" in text


def test_an_internal_error_of_report_merge_exits_3_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def broken(argv: list[str]) -> int:
        raise RuntimeError("boom")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_merge", broken)
    assert cli.main(["report", "merge", "x", "--out", "y"]) == 3
    err = capsys.readouterr().err
    assert "kernelgate report merge: internal error (RuntimeError: boom)" in err
    assert "To reproduce: kernelgate report merge x --out y" in err


def table_rows() -> list[list[str]]:
    text = TABLE.read_text(encoding="utf-8")
    section = text.split("\n## Exit statuses\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def test_every_row_of_the_readme_table_names_tests_that_exist() -> None:
    rows = table_rows()
    assert [row[0].split()[0] for row in rows] == ["0", "1", "1", "2", "3"]
    for row in rows:
        named = re.findall(r"`tests/(test_\w+\.py)::(test_\w+)`", row[-1])
        assert named, row
        for file, name in named:
            tree = ast.parse((ROOT / "tests" / file).read_text(encoding="utf-8"))
            functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert name in functions, f"{file}::{name}"
