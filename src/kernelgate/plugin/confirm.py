"""Confirm a failure: measure the benchmark again in a fresh pytest process, with the same options."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from kernelgate.baseline.names import safe_name
from kernelgate.measure.results import Measurement

if TYPE_CHECKING:
    from kernelgate.plugin.fixture import KernelGate


def remeasure(kg: KernelGate) -> tuple[Measurement | None, str]:
    """Measure this benchmark again in a fresh process (a new round) and return its record."""
    opts = kg.state.options
    folder = opts.out_dir / "confirm"
    out = folder / f"{safe_name(kg.node_name)}.json"
    out.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", f"{kg.node.path}::{kg.node_name}",
        "-p", "no:cacheprovider", "-q", "--benchmark-disable", "--kernelgate",
        f"--kernelgate-confirm-out={out}", f"--kernelgate-device={kg.device}",
        f"--kernelgate-out={folder}",
    ]  # fmt: skip
    if opts.slow_layer:
        command.append(f"--kernelgate-slow-layer={opts.slow_layer}:{opts.slow_extra_runs}")
    if opts.iterations:
        command.append(f"--kernelgate-iterations={opts.iterations}")
    if opts.matrix:  # the same matrix, so that the node id exists in the child
        command.append(f"--kernelgate-matrix={opts.matrix}")
    command += [f"--kernelgate-only={text}" for text in opts.only]
    done = subprocess.run(
        command, cwd=kg.node.config.rootpath, capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0 or not out.is_file():
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        return None, f"confirm run failed (exit {done.returncode}): " + " | ".join(tail)
    return Measurement.from_json(json.loads(out.read_text(encoding="utf-8"))), ""
