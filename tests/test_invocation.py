"""The user's invocation as a child pytest gets it: everything but the test selection and the
options that write the parent's files; paths inside the head's checkout moved into the base's."""

from __future__ import annotations

from pathlib import Path

from kernelgate.plugin.invocation import child_args, mapped, without


def test_plugins_ini_overrides_and_options_travel_the_selection_does_not() -> None:
    args = [
        "benchmarks", "-p", "myplugin", "-pother", "-o", "kernelgate_x=1", "-c", "ci.toml",
        "--rootdir=/repo", "-k", "yolov8n and fp16", "-m", "gpu", "-n", "2", "--dist=load",
        "--kernelgate-device=cuda", "--kernelgate-only", "mode=graph", "--benchmark-min-rounds=7",
        "--kernelgate-save", "--kernelgate-out", "/tmp/out", "--junitxml=r.xml", "-x", "-q",
        "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]", "--trust-me", "-kfoo",
    ]  # fmt: skip
    selection = ["benchmarks", "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"]
    assert child_args(args, selection) == [
        "-p", "myplugin", "-pother", "-o", "kernelgate_x=1", "-c", "ci.toml", "--rootdir=/repo",
        "--kernelgate-device=cuda", "--kernelgate-only", "mode=graph", "--benchmark-min-rounds=7",
        "--trust-me",
    ]  # fmt: skip


def test_a_positional_that_is_an_option_value_stays() -> None:
    # "-p benchmarks": the plugin's name happens to equal a selected path
    assert child_args(["-p", "benchmarks", "benchmarks"], ["benchmarks"]) == ["-p", "benchmarks"]
    assert child_args(["--kernelgate-only", "model=x", "model=x"], ["model=x"]) == [
        "--kernelgate-only",
        "model=x",
    ]


def test_paths_inside_the_head_move_into_the_base() -> None:
    head, base = Path("/work/repo"), Path("/tmp/judge/base")
    args = ["-c", "/work/repo/ci/pytest.toml", "--rootdir=/work/repo", "--basetemp=/tmp/x", "-p", "plug"]
    assert mapped(args, head, base) == [
        "-c", "/tmp/judge/base/ci/pytest.toml", "--rootdir=/tmp/judge/base", "--basetemp=/tmp/x",
        "-p", "plug",
    ]  # fmt: skip


def test_without_drops_an_option_in_both_forms() -> None:
    args = ["--kernelgate-slow-layer", "model.2:3", "-q", "--kernelgate-slow-layer=model.4", "-p", "x"]
    assert without(args, "--kernelgate-slow-layer") == ["-q", "-p", "x"]


class _Group:
    """Collects the options kernelgate registers (``options.add``)."""

    def __init__(self) -> None:
        self.options: dict[str, bool] = {}  # name -> takes a value

    def getgroup(self, *_: object) -> _Group:
        return self

    def addoption(self, name: str, **kwargs: object) -> None:
        self.options[name] = kwargs.get("action") not in ("store_true", "store_false")


# what a child must not get: it writes its own record and nothing of the parent's
PARENT_ONLY = {
    "--kernelgate-save", "--kernelgate-append", "--kernelgate-out", "--kernelgate-confirm-out",
    "--kernelgate-report-dir", "--kernelgate-history", "--kernelgate-replace-unreadable",
    "--kernelgate-keep-round", "--kernelgate-standby",
}  # fmt: skip


def test_every_kernelgate_option_reaches_the_child_but_those_that_write_the_parents_files() -> None:
    from kernelgate.plugin import options

    group = _Group()
    options.add(group)  # type: ignore[arg-type]
    assert "--kernelgate-trust-pt" in group.options and len(group.options) >= 25
    selection = ["benchmarks/test_x.py::TestGate::test_yolo[yolov8n]"]
    for name, takes_value in group.options.items():
        given = [name, "benchmarks", *selection] if takes_value else [name, *selection]
        kept = child_args(given, [*selection, "benchmarks"])
        if name in PARENT_ONLY:
            assert kept == [], name
        else:  # a value that happens to equal a selected path is still the option's
            assert kept == ([name, "benchmarks"] if takes_value else [name]), name
            if takes_value:
                assert child_args([f"{name}=v", *selection], selection) == [f"{name}=v"], name
