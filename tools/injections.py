"""Changes injected into a pull request's head, one per configuration of the quick set, and what the
gate must say of each: the regressions and the small changes of docs/sensitivity.md's targets.

    python tools/injections.py conftest SET        the code a head's benchmarks/conftest.py gets
    python tools/injections.py evaluate SET XML     each configuration's outcome from a run's JUnit XML,
                                                    a Markdown table; exit 1 when one misses its target

SET: ``a``, ``b``, ``c`` (a regression in every configuration: six kinds, each in another layer and
model), ``small`` (a kernel of about 1 µs in the detection head of every configuration, +0.5 % of that
layer or less: must pass). ``tools/verdict-lab inject OUT SET ARGS...`` commits the change in a head
branch and gates it as a pull request is gated.

A regression is caught when its test failed with a REGRESSION whose headline names the changed layer
first (its GPU time, or its host time for a host-side change) and no other layer; a small change is
right when its test passed.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass


@dataclass(frozen=True)
class Change:
    config: str  # the configuration's id (test_yolo[<id>])
    kind: str  # kernel, cudnn, bilinear, silu, sleep, sync, tiny
    layer: int  # the top-level layer it goes into

    @property
    def regression(self) -> bool:
        return self.kind != "tiny"

    def describe(self) -> str:
        return {
            "kernel": "three extra elementwise kernels after",
            "cudnn": "cuDNN off (native convolution) in the first conv of",
            "bilinear": "bilinear upsampling in",
            "silu": "SiLU unfused (x * sigmoid(x)) in the convs of",
            "sleep": "a 0.2 ms time.sleep in the forward of",
            "sync": "torch.cuda.synchronize() after",
            "tiny": "one spin kernel of 100 cycles after",
        }[self.kind] + f" model.{self.layer}"


# the quick set's configurations, in the order of each set's changes below
CONFIGS = (
    "yolov8n-fp16-bs1-640",
    "yolov8n-fp32-bs1-640",
    "yolo11n-fp16-bs1-640",
    "yolo11n-fp32-bs1-640",
    "yolov8n-fp16-bs1-640-graph",
    "yolo11n-fp16-bs1-640-graph",
    "yolov8n-fp16-bs1-640-pipeline",
    "yolo26n-fp16-bs1-640",
)

# (kind, layer) per configuration. Host-side kinds (sleep, sync) only where the forward runs eagerly
# (the 5th and 6th are CUDA graphs: a replay runs kernels, not Python, and a synchronize cannot be
# captured). Upsample layers: yolov8n 10 and 13, yolo11n and yolo26n 11 and 14. Detect: yolov8n 22,
# yolo11n and yolo26n 23.
_TABLE = {
    "a": "kernel 4, sleep 8, cudnn 3, sync 7, bilinear 13, silu 2, cudnn 16, sleep 5",
    "b": "cudnn 7, kernel 12, sleep 16, silu 8, kernel 18, bilinear 11, sync 9, cudnn 1",
    "c": "silu 21, bilinear 10, sync 19, kernel 13, cudnn 5, kernel 20, sleep 2, bilinear 14",
    "small": "tiny 22, tiny 22, tiny 23, tiny 23, tiny 22, tiny 23, tiny 22, tiny 23",
}


def _changes(row: str) -> tuple[Change, ...]:
    pairs = [item.split() for item in row.split(", ")]
    assert len(pairs) == len(CONFIGS), row
    return tuple(Change(c, kind, int(layer)) for c, (kind, layer) in zip(CONFIGS, pairs, strict=True))


SETS: dict[str, tuple[Change, ...]] = {name: _changes(row) for name, row in _TABLE.items()}

CONFTEST = """

# --- the change under review (tools/injections.py, set {name}): one per configuration ---
import time as _time

import torch as _torch
from kernelgate.plugin import fixture as _fixture

_CHANGES = {changes!r}
_build = _fixture.build_detection_model


class _Unfused(_torch.nn.Module):
    def forward(self, x):
        return x * _torch.sigmoid(x)


def _inject(spec, device, **kw):
    net = _build(spec, device, **kw)
    change = _CHANGES.get(spec.id)
    if change is None:
        return net
    kind, n = change
    layer = net.model[n]
    if kind == "kernel":
        layer.register_forward_hook(lambda m, i, o: o + 0 + 0 + 0)
    elif kind == "tiny":
        layer.register_forward_hook(lambda m, i, o: (_torch.cuda._sleep(100), o)[1])
    elif kind == "cudnn":
        conv = next(m for m in layer.modules() if isinstance(m, _torch.nn.Conv2d))
        conv.register_forward_pre_hook(lambda m, i: setattr(_torch.backends.cudnn, "enabled", False))
        conv.register_forward_hook(lambda m, i, o: setattr(_torch.backends.cudnn, "enabled", True))
    elif kind == "bilinear":
        layer.mode = "bilinear"
    elif kind == "silu":
        # a SiLU of their own: ultralytics' Conv.default_act is one module shared by every Conv
        for m in layer.modules():
            if isinstance(getattr(m, "act", None), _torch.nn.SiLU):
                m.act = _Unfused()
    elif kind in ("sleep", "sync"):
        forward = layer.forward

        def changed(*a, **k):
            if kind == "sleep":
                _time.sleep(0.0002)
            out = forward(*a, **k)
            if kind == "sync":
                _torch.cuda.synchronize()
            return out

        layer.forward = changed
    return net


_fixture.build_detection_model = _inject
"""


def conftest(name: str) -> str:
    changes = {c.config: (c.kind, c.layer) for c in SETS[name]}
    return CONFTEST.format(name=name, changes=changes)


NAMED = re.compile(r"^(host )?(model\.\d+|input|preprocess|postprocess)$")


def named_layers(headline: str) -> list[str]:
    """The layers a REGRESSION headline names, in its order: ``base -> head on this runner: model.6
    +3.0 % (origin), host model.9 +140 %, wall +4 %; ...`` gives ``model.6, host model.9``."""
    found = headline.split("on this runner: ", 1)
    if len(found) < 2:
        return []
    figures = found[1].split("; ", 1)[0].split(", ")
    names = [re.sub(r" [+-]\d.*$", "", f).strip() for f in figures]
    return [n for n in names if NAMED.match(n)]


@dataclass(frozen=True)
class Outcome:
    change: Change
    result: str  # failed, passed, skipped, missing
    headline: str
    answers: tuple[str, ...]  # the changed layer's lines of the judge's answer (GPU, host), if any

    @property
    def layers(self) -> list[str]:
        return named_layers(self.headline) if self.result == "failed" else []

    @property
    def answer(self) -> str:
        return self.answers[0] if self.answers else ""

    @property
    def under_thresholds(self) -> bool:
        """A regression that passed where the judge measured the changed layer and found each of its
        figures within its limit or faster: the change is no regression on this GPU, which the
        message says (e.g. cuDNN off in a conv whose cuBLAS path is faster here)."""
        fine = ("within its limit", "faster past its limit")
        return (
            self.change.regression
            and self.result == "passed"
            and bool(self.answers)
            and all(_answered(a) in fine for a in self.answers)
        )

    @property
    def right(self) -> bool:
        if not self.change.regression:
            return self.result == "passed"
        want = f"model.{self.change.layer}"
        layers = [n.removeprefix("host ") for n in self.layers]
        return "REGRESSION" in self.headline and bool(layers) and set(layers) == {want}


def _answered(line: str) -> str:
    """The answer of one line of the judge's message: ``model.7: stored baseline …; base -> head …,
    limit +0.5 µs: faster past its limit (each process: …)`` gives ``faster past its limit``."""
    return line.split(" (each process")[0].rsplit(": ", 1)[-1]


def outcomes(name: str, xml: str) -> list[Outcome]:
    cases = {c.attrib["name"]: c for c in ET.parse(xml).getroot().iter("testcase")}
    found = []
    for change in SETS[name]:
        case = cases.get(f"test_yolo[{change.config}]")
        if case is None:
            found.append(Outcome(change, "missing", "", ""))
            continue
        failure = case.find("failure")
        props = {p.attrib["name"]: p.attrib.get("value", "") for p in case.iter("property")}
        if failure is not None:
            result, text = "failed", failure.attrib.get("message", "") + "\n" + (failure.text or "")
        elif case.find("skipped") is not None:
            result, text = "skipped", ""
        else:
            result, text = "passed", props.get("kernelgate", "")
        lines = text.strip().splitlines()
        want = f"model.{change.layer}:"
        answers = tuple(ln.strip() for ln in lines if ln.strip().startswith((want, f"host {want}")))
        found.append(Outcome(change, result, lines[0] if lines else "", answers))
    return found


def table(name: str, found: list[Outcome]) -> str:
    rows = [
        f"| configuration | change (set {name}) | outcome | layers the headline names | right |",
        "|---|---|---|---|---|",
    ]
    for o in found:
        shown = ", ".join(o.layers) or "-"
        right = "yes" if o.right else "no: under its thresholds here" if o.under_thresholds else "**no**"
        rows.append(f"| {o.change.config} | {o.change.describe()} | {o.result} | {shown} | {right} |")
    rows.append("")
    for o in found:
        rows.append(f"- {o.change.config}: {o.headline[:400]}")
        rows.extend(f"  - {a[:400]}" for a in o.answers)
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "conftest" and argv[1] in SETS:
        print(conftest(argv[1]))
        return 0
    if len(argv) >= 3 and argv[0] == "evaluate" and argv[1] in SETS:
        found = outcomes(argv[1], argv[2])
        print(table(argv[1], found))
        return 0 if all(o.right for o in found) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
