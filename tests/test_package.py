"""kernelgate as a package: ``python -m build`` with build isolation, ``twine check``, the metadata a
package index shows, and the wheel in a fresh environment: ``pytest --help`` lists the plugin's
options, ``kernelgate --version`` and ``python -m kernelgate`` answer."""

from __future__ import annotations

import email
import subprocess
import sys
import zipfile
from pathlib import Path

from wheels import fresh_venv, own_env

import kernelgate


def test_the_wheel_and_sdist_pass_twine_check_with_the_metadata_an_index_shows(
    built: tuple[Path, Path],
) -> None:
    wheel, sdist = built
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"kernelgate-{kernelgate.__version__}.dist-info"
        meta = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    for shipped in ("py.typed", "__main__.py", "report/templates/report_page.html.j2", "cli.py", "exits.py"):
        assert f"kernelgate/{shipped}" in names, shipped
    assert f"{info}/licenses/LICENSE" in names
    assert meta["License-Expression"] == "MIT"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Issues", "Source"} <= set(urls)
    classifiers = meta.get_all("Classifier")
    assert "Framework :: Pytest" in classifiers and "Typing :: Typed" in classifiers
    requires = meta.get_all("Requires-Dist")
    # timing.py reads pytest-benchmark's internals: an upper bound (tests/test_adopter.py runs the
    # oldest and the newest allowed)
    assert "pytest-benchmark<6,>=4.0" in requires
    assert "kernelgate = kernelgate.plugin.hooks" in entry_points
    assert "kernelgate = kernelgate.cli:main" in entry_points


def test_the_wheel_in_a_fresh_environment_lists_its_options_and_answers(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", str(built[0]))
    where = subprocess.run(
        [str(python), "-c", "import kernelgate; print(kernelgate.__file__)"],
        capture_output=True, text=True, check=True, env=own_env(),
    ).stdout  # fmt: skip
    assert where.startswith(str(tmp_path / "venv")), where  # the wheel, not this checkout
    empty = tmp_path / "project"
    empty.mkdir()
    helped = subprocess.run(
        [str(python), "-m", "pytest", "--help"],
        cwd=empty,
        capture_output=True,
        text=True,
        check=True,
        env=own_env(),
    )
    for option in ("--kernelgate-save", "--kernelgate-device", "--kernelgate-matrix", "--kernelgate-disable"):
        assert option in helped.stdout, option
    assert "kernelgate: per-layer CUDA kernel regression gate" in helped.stdout
    version = f"kernelgate {kernelgate.__version__}"
    for command in ([str(tmp_path / "venv" / "bin" / "kernelgate")], [str(python), "-m", "kernelgate"]):
        answered = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, check=True, env=own_env()
        )
        assert answered.stdout.strip() == version
