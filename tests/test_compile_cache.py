"""torch.compile's caches in ``kernelgate doctor``: where they are, whether a CI job keeps them (made-up
mounts and variables), the findings on made-up facts, and gathering them from real folders."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fake_nvml import FakeGpu, fake_pynvml
from test_doctor import by_check, healthy

from kernelgate.machine import compile_cache, doctor
from kernelgate.machine.compile_cache import CacheFolder, ci_system, mount_of, persistence
from kernelgate.machine.finding import Level
from kernelgate.machine.fitness import diagnose, exit_code

MOUNTS = """overlay / overlay rw,relatime,lowerdir=/var/lib/docker/l/A 0 0
proc /proc proc rw 0 0
tmpfs /dev/shm tmpfs rw 0 0
/dev/nvme1n1 /cache ext4 rw,relatime 0 0
/dev/nvme0n1 /home/runner/my\\040disk xfs rw 0 0
"""
VM_MOUNTS = "/dev/vda / ext4 rw 0 0\ntmpfs /run tmpfs rw 0 0\n"


def test_the_mount_that_holds_a_path() -> None:
    assert mount_of("/cache/inductor", MOUNTS) == ("/cache", "ext4")
    assert mount_of("/cachex/inductor", MOUNTS) == ("/", "overlay")  # a prefix of the name is no mount
    assert mount_of("/home/runner/my disk/t", MOUNTS) == ("/home/runner/my disk", "xfs")
    assert mount_of("/tmp/torchinductor_root", "") == ("/", "unknown")


@pytest.mark.parametrize(
    ("path", "environ", "mounts", "container", "kept", "says"),
    [
        (
            "/cache/inductor",
            {"RUNNER_ENVIRONMENT": "github-hosted"},
            VM_MOUNTS,
            False,
            False,
            "GitHub-hosted",
        ),
        ("/w/_temp/inductor", {"RUNNER_TEMP": "/w/_temp"}, VM_MOUNTS, False, False, "RUNNER_TEMP"),
        ("/run/inductor", {}, VM_MOUNTS, False, False, "tmpfs"),
        ("/root/.triton/cache", {}, MOUNTS, True, False, "container's own file system"),
        ("/tmp/torchinductor_root", {}, VM_MOUNTS, False, None, "temporary folder"),
        ("/tmp/torchinductor_root", {}, MOUNTS, True, False, "overlay"),
        ("/cache/inductor", {}, MOUNTS, True, True, "on /cache (ext4)"),
        ("/root/.triton/cache", {}, VM_MOUNTS, False, True, "on / (ext4)"),
    ],
)
def test_whether_a_ci_job_keeps_a_folder(
    path: str, environ: dict[str, str], mounts: str, container: bool, kept: bool | None, says: str
) -> None:
    found = persistence(path, environ, mounts, container, temp="/tmp")
    assert found.kept is kept and says in found.why


def test_the_ci_system_from_its_variables() -> None:
    assert ci_system({"GITHUB_ACTIONS": "true", "CI": "true"}) == "GitHub Actions"
    assert ci_system({"CI": "1"}) == "a CI system"
    assert ci_system({"CI": "false"}) is None and ci_system({}) is None


def test_the_folders_by_default_and_as_set(tmp_path: Path) -> None:
    default = compile_cache.inductor_dir({})
    assert Path(default).name.startswith("torchinductor_") and compile_cache.triton_dir({}) == os.path.join(
        default, "triton", "0"
    )  # under torch.compile, Triton's kernels go below Inductor's folder unless TRITON_CACHE_DIR is set
    inductor, triton = tmp_path / "inductor", tmp_path / "triton"
    for kernel in ("k1", "k2"):
        (triton / kernel).mkdir(parents=True)
        (triton / kernel / "x.cubin").write_bytes(b"x" * 100)
    (triton / "launcher").mkdir()
    (triton / "launcher" / "cuda_utils.so").write_bytes(b"x" * 50)
    environ = {"TORCHINDUCTOR_CACHE_DIR": str(inductor), "TRITON_CACHE_DIR": str(triton)}
    ind, tri = compile_cache.read_folders(environ, VM_MOUNTS, container=False)
    assert (ind.name, ind.path, ind.from_env, ind.bytes, ind.kernels) == (
        "Inductor",
        str(inductor),
        True,
        0,
        None,
    )
    assert ind.writable  # not there yet: its nearest existing parent is writable
    assert (tri.bytes, tri.kernels, tri.writable) == (250, 2, True)
    assert tri.kept is (None if str(tmp_path).startswith("/tmp/") else True)


def folder(
    name: str, kept: bool | None, why: str = "in the temporary folder (/tmp): ...", **kw: object
) -> CacheFolder:
    values: dict[str, object] = dict(
        name=name,
        variable=f"{name.upper()}_DIR",
        path=f"/tmp/{name.lower()}",
        from_env=False,
        bytes=3 * 2**30,
        kernels=817 if name == "Triton" else None,
        writable=True,
        kept=kept,
        kept_why=why,
    )
    values.update(kw)
    return CacheFolder(**values)  # type: ignore[arg-type]


def test_a_ci_runner_that_starts_cold_every_job_is_warned_with_the_fix() -> None:
    gone = "a GitHub-hosted runner is a fresh machine for every job"
    facts = healthy(
        compile_caches=(folder("Inductor", False, gone), folder("Triton", False, gone)), ci="GitHub Actions"
    )
    found = by_check(diagnose(facts), "compile-cache")
    assert [f.level for f in found] == [Level.OK, Level.OK, Level.WARN]
    assert found[1].message == (
        "Triton cache /tmp/triton (default; TRITON_DIR unset): 3.0 GiB, 817 compiled kernel(s); " + gone
    )
    assert found[2].message.startswith("the Inductor and Triton cache(s) are not kept between jobs on GitHub")
    assert "TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR at a disk" in found[2].fix
    assert "actions/cache" in found[2].fix and "torch.compiler.save_cache_artifacts()" in found[2].fix
    assert exit_code(diagnose(facts)) == 0 and exit_code(diagnose(facts), strict=True) == 1
    # the same folders off CI: a note with the fix, not a warning
    local = by_check(diagnose(replace(facts, ci=None)), "compile-cache")
    assert local[2].level is Level.INFO and "not kept between jobs here" in local[2].message


def test_kept_unknown_unwritable_and_switched_off_caches() -> None:
    kept = folder("Inductor", True, "on /cache (ext4): kept as long as that file system is")
    found = by_check(diagnose(healthy(compile_caches=(kept,), ci="GitHub Actions")), "compile-cache")
    assert [f.level for f in found] == [Level.OK]  # kept: nothing to fix
    unknown = by_check(diagnose(healthy(compile_caches=(kept, folder("Triton", None)))), "compile-cache")
    assert [f.level for f in unknown] == [Level.OK, Level.OK, Level.INFO]
    assert "Triton cache(s) are kept between jobs only where jobs share this machine" in unknown[2].message
    assert unknown[2].fix.startswith("if each CI job starts a fresh container or machine: keep both")
    readonly = by_check(diagnose(healthy(compile_caches=(replace(kept, writable=False),))), "compile-cache")
    assert readonly[0].level is Level.WARN and "not writable" in readonly[0].message
    off = healthy(compile_caches=(kept,), variables={"TORCHINDUCTOR_FX_GRAPH_CACHE": "0"})
    (switched, _) = by_check(diagnose(off), "compile-cache")
    assert switched.level is Level.WARN and switched.fix == "unset TORCHINDUCTOR_FX_GRAPH_CACHE"
    assert by_check(diagnose(healthy()), "compile-cache") == []  # facts without the folders: no finding


def test_gather_reads_the_compile_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(FakeGpu()))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("GITLAB_CI", "true")
    (tmp_path / "triton" / "k").mkdir(parents=True)
    (tmp_path / "triton" / "k" / "k.cubin").write_bytes(b"x" * 7)
    facts = doctor.gather(tmp_path / "baselines")
    inductor, triton = facts.compile_caches
    assert inductor.path == str(tmp_path / "inductor") and inductor.from_env
    assert (triton.bytes, triton.kernels) == (7, 1)
    assert facts.ci == "GitLab CI"
    text = doctor.render(facts, diagnose(facts), width=400)
    assert (
        f"compile-cache  Triton cache TRITON_CACHE_DIR={tmp_path / 'triton'}: 7 B, 1 compiled kernel(s)"
        in text
    )
