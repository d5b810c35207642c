"""report.json: the machine-readable diff, with every field of a delta (also fields added later)."""

from __future__ import annotations

import dataclasses
import json

from real_data import slowed_diff

from kernelgate import report_json
from kernelgate.compare import Delta


def test_document_of_the_real_regression() -> None:
    doc = json.loads(report_json.render([slowed_diff()]))
    assert doc["kernelgate_diff"] == {"schema_version": report_json.SCHEMA_VERSION}
    assert doc["failed"] is True
    assert doc["verdict"].startswith("kernelgate: 1 layer slower in yolov8n-fp16-bs1-640")
    (bench,) = doc["benchmarks"]
    assert bench["fail_on"] == ["regressed"]
    assert bench["total"] | {"threshold": None} == {
        "scope": "total",
        "name": "total",
        "layer": "",
        "baseline_us": 1173.189,
        "current_us": 1277.553,
        "threshold": None,
        "verdict": "regressed",
        "baseline_calls": None,
        "current_calls": None,
        "delta_us": 104.363,
        "delta_pct": 8.896,
        "failing": True,
    }
    assert bench["total"]["threshold"] == {"rel": 0.05, "floor_us": 5.0}
    failing = [lay for lay in bench["layers"] if lay["failing"]]
    assert [lay["name"] for lay in failing] == ["model.2"]
    assert failing[0]["type"] == "C2f" and len(failing[0]["kernels"]) == 22
    assert sum(k["failing"] for k in failing[0]["kernels"]) == 6
    assert [h["kind"] for h in failing[0]["hints"]] == ["more launches"]
    assert [h["kind"] for h in bench["hints"]] == ["host overhead grew"]
    assert {e["key"] for e in bench["environment"] if e["changed"]} == {"temperature_c", "power_w"}
    assert bench["host_overhead_us"] == {"baseline": 2845.691, "current": 3081.651}


@dataclasses.dataclass(frozen=True)
class SignificantDelta(Delta):
    p_value: float | None = None


def test_fields_added_to_delta_later_are_written() -> None:
    d = slowed_diff().total.delta
    significant = SignificantDelta(
        **{f.name: getattr(d, f.name) for f in dataclasses.fields(d)}, p_value=0.00012
    )
    assert report_json.delta(significant, True)["p_value"] == 0.0
    assert (
        report_json.delta(SignificantDelta(**{**significant.__dict__, "p_value": 0.0123}), True)["p_value"]
        == 0.012
    )
