"""report.json: the machine-readable diff, with every field of a delta (also fields added later)."""

from __future__ import annotations

import dataclasses
import json

from real_data import slowed_diff

from kernelgate.report import json as report_json


def test_document_of_the_real_regression() -> None:
    doc = json.loads(report_json.render([slowed_diff()]))
    assert doc["kernelgate_diff"] == {"schema_version": report_json.SCHEMA_VERSION}
    assert doc["failed"] is True
    assert doc["verdict"].startswith("kernelgate: 1 layer slower in yolov8n-fp16-bs1-640")
    (bench,) = doc["benchmarks"]
    assert bench["fail_on"] == ["inconclusive", "regressed"]  # a doubt fails by default (on_inconclusive)
    assert bench["total"] | {"threshold": None} == {
        "scope": "total",
        "name": "total",
        "layer": "",
        "baseline_us": 1173.863,
        "current_us": 1274.053,
        "threshold": None,
        "verdict": "regressed",
        "baseline_calls": None,
        "current_calls": None,
        "delta_us": 100.19,
        "delta_pct": 8.535,
        "failing": True,
        "p_value": 0.0,
        "noise_pct": 0.003,  # the spread of the majority of the 3 rounds (one outlier round is no noise)
        "confirm_us": None,
        "confirm_base_us": None,
        "note": "",
        "basis": "measured",
    }
    assert bench["total"]["threshold"] == {"rel": 0.01, "floor_us": 0.5}
    failing = [lay for lay in bench["layers"] if lay["failing"]]
    assert [lay["name"] for lay in failing] == ["model.2"]
    assert failing[0]["type"] == "C2f" and len(failing[0]["kernels"]) == 26
    assert sum(k["failing"] for k in failing[0]["kernels"]) == 15
    assert [h["kind"] for h in failing[0]["hints"]] == ["more launches"]
    assert [h["kind"] for h in bench["hints"]] == ["host overhead grew"]
    assert {e["key"] for e in bench["environment"] if e["changed"]} == {"power_w"}
    assert bench["host_overhead_us"] == {"baseline": 2808.162, "current": 3135.905}
    assert bench["time_split"]["current"] == {
        "device": "cuda",
        "wall_us": 4409.959,
        "busy_us": 1274.053,
        "host_us": 3135.905,
        "busy_share": 0.2889,
        "bound": "launch-bound",
    }
    assert bench["time_split"]["baseline"]["bound"] == "launch-bound"
    assert [g["group"] for g in bench["groups"]] == ["backbone", "neck", "head", "preprocess"]
    assert bench["groups"][0] == {
        "group": "backbone",
        "baseline_us": 539.969,
        "current_us": 640.211,
        "delta_pct": 18.564,
    }


def test_every_field_of_a_delta_is_written_rounded() -> None:
    d = slowed_diff().total.delta
    assert report_json.delta(dataclasses.replace(d, p_value=0.00012), True)["p_value"] == 0.0
    assert report_json.delta(dataclasses.replace(d, p_value=0.0123), True)["p_value"] == 0.012
