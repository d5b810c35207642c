"""tools/sensitivity.py's evaluation across hosts, on synthetic collections: the screen against a
baseline of another (faster) host, then the judge on this host's processes."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from types import ModuleType

from factories import kernel, measurement, tools_script

from kernelgate.measure.results import Measurement

LAYERS = {"model.1": 32.0, "model.2": 100.0, "model.22": 300.0}


def sensitivity() -> ModuleType:
    return tools_script("sensitivity")


def forward(rng: random.Random, scale: float = 1.0, extra: float = 0.0) -> Measurement:
    """One process: 20 iterations with 0.2 % noise; ``extra`` µs of a spin kernel in model.2."""

    def noisy(value: float) -> list[float]:
        return [round(value * scale * (1 + rng.uniform(-0.002, 0.002)), 3) for _ in range(20)]

    layers = {n: noisy(v + (extra if n == "model.2" else 0.0)) for n, v in LAYERS.items()}
    kernels = {f"{n}.conv :: sm90_xmma_fprop": noisy(v) for n, v in LAYERS.items()}
    if extra:
        kernels["model.2 :: spin_kernel"] = noisy(extra)
    m = measurement(layers=layers, total=[sum(v[i] for v in layers.values()) for i in range(20)])
    return Measurement(**{**m.__dict__, "kernels": tuple(kernel(k, v) for k, v in kernels.items())})


def write(path: Path, variants: dict[str, Measurement]) -> None:
    target = "yolov8n-fp16-bs1-640"
    data = {"configs": {target: {"seconds": 1.0, "variants": {k: v.to_json() for k, v in variants.items()}}}}
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)


def test_across_hosts_a_change_over_the_threshold_is_caught_and_unchanged_code_passes(tmp_path: Path) -> None:
    rng = random.Random(0)
    there, here = tmp_path / "host-a", tmp_path / "host-b"
    there.mkdir(), here.mkdir()
    for i in range(3):  # the baseline's host is 2 % faster on every layer
        write(there / f"baseline-{i}.json.gz", {"clean": forward(rng, scale=0.98)})
    for t in range(6):
        write(
            here / f"trial-{t:02d}.json.gz",
            {
                "clean": forward(rng),
                "model.2 +1%": forward(rng, extra=1.0),
                "model.2 +5%": forward(rng, extra=5.0),
            },
        )
    module = sensitivity()
    text = module.evaluate_across(here, there, tmp_path / "table.md")
    row = text.strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "6/6 / 0/6"  # the faster host makes suspects, and the judge clears every one
    assert cells[1] == "0/6 (6 suspected)"  # +1 %: a new kernel, so judged, and under its threshold
    assert cells[2] == "6/6 (6 suspected)"  # +5 %: caught every time, model.2 named
    assert (tmp_path / "table.md").read_text(encoding="utf-8") == text
