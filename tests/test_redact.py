"""Redaction: stable short hashes in every published file; generic names kept; terminal untouched."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from pathlib import Path

from real_data import DATA, slowed_item

from kernelgate.measure import grouped
from kernelgate.report import publish, redact, trace_store
from kernelgate.report.redact import Redactor

TRACE = DATA / "yolov8n-fp16-h200-2steps.trace.json.gz"


def test_hashes_are_stable_short_and_keyed() -> None:
    r = Redactor()
    assert r.layer("model.2") == r.layer("model.2") == "layer-" + r.layer("model.2")[6:]
    assert re.fullmatch(r"layer-[0-9a-f]{8}", r.layer("model.2"))
    assert r.layer("model.2") != r.module("model.2")  # the kind is part of the hash
    assert Redactor(b"secret").layer("model.2") != r.layer("model.2")
    assert [r.layer(n) for n in ("total", "input", "(unattributed)")] == ["total", "input", "(unattributed)"]
    assert r.kernel("Memcpy HtoD (Pinned -> Device)") == "Memcpy HtoD (Pinned -> Device)"
    assert (
        r.kernel_key("model.2.cv1.bn :: bn_kernel")
        == f"{r.module('model.2.cv1.bn')} :: {r.kernel('bn_kernel')}"
    )


def real_names(item: publish.Item) -> set[str]:
    m = item.current
    names = {lay.name for lay in m.layers if lay.name.startswith("model.")}
    names |= {lay.type for lay in m.layers if lay.type}
    names |= {k.module for k in m.kernels if k.module.startswith("model.")}
    names |= {k.name for k in m.kernels if not k.name.startswith("Memcpy")}
    return names


def test_no_layer_type_module_or_kernel_name_in_any_published_file(tmp_path: Path) -> None:
    item = slowed_item()
    item = publish.Item(item.comparison, item.base, item.current, current_trace=TRACE, base_trace=None)
    published = publish.publish([item], tmp_path, redact=True)
    texts = {
        p.name: p.read_text()
        for p in (tmp_path / "report.md", tmp_path / "report.html", tmp_path / "report.json")
    }
    (trace,) = published.traces
    texts[trace.name] = gzip.decompress(trace.read_bytes()).decode()
    leaks = {name: [n for n in real_names(item) if n in text] for name, text in texts.items()}
    assert leaks == {name: [] for name in texts}
    r = Redactor.from_environment()
    assert f"`{r.layer('model.2')}` {r.layer_type('C2f')}" in texts["report.md"]
    assert r.layer("model.2") in texts["report.html"] and r.layer("model.2") in texts["report.json"]


def test_trace_names_match_the_report_and_strings_in_args_are_dropped() -> None:
    r = Redactor()
    doc = trace_store.redact(trace_store.load(TRACE), r)
    names = {e["name"] for e in doc["traceEvents"]}
    assert "kg/" + r.module("model.2.cv1.conv") in names
    assert not any(n.startswith("kg/model.") for n in names)
    assert any(n.startswith("ProfilerStep#") for n in names) and "cudaLaunchKernel" in names
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert kernels and all(e["name"].startswith("kernel-") for e in kernels)
    assert all(not isinstance(v, str) for e in doc["traceEvents"] for v in e.get("args", {}).values())
    assert json.dumps(doc).count("implicit_convolve_sgemm") == 0


def test_layers_keep_their_groups_under_hashed_names() -> None:
    r = Redactor()
    m = slowed_item().current
    hidden = r.measurement(m)
    assert hidden.groups[r.layer("model.2")] == "backbone"
    assert hidden.groups["input"] == "preprocess"
    assert not any(name.startswith("model.") for name in hidden.groups)
    assert grouped.group_times(hidden) == grouped.group_times(m)


def test_an_old_record_redacted_still_groups_its_stages() -> None:
    m = dataclasses.replace(slowed_item().current, groups={})
    assert grouped.group_times(Redactor().measurement(m)) == grouped.group_times(m)


def test_an_encoded_range_name_is_hashed_as_the_module_it_names() -> None:
    """``kg/model.1.a%5Cb`` is the range of module ``model.1.a\\b``: hashed as the reports hash it."""
    r = Redactor()
    event = {"ph": "X", "cat": "user_annotation", "name": "kg/model.1.a%5Cb", "ts": 0, "dur": 1}
    doc = trace_store.redact({"traceEvents": [event]}, r)
    assert doc["traceEvents"][0]["name"] == "kg/" + r.module("model.1.a\\b")


def test_an_unreliable_reason_that_names_a_kernel_is_redacted() -> None:
    m = slowed_item().current
    kernel = m.kernels[0]
    reasons = (f"1 kernels ran a different number of times (e.g. {kernel.key}: ...)", "3 iterations")
    hidden = Redactor().measurement(dataclasses.replace(m, unreliable_reasons=reasons))
    assert hidden.unreliable_reasons == (redact.REDACTED_REASON, "3 iterations")


def test_the_origin_and_notes_that_name_a_layer_are_redacted() -> None:
    item = slowed_item()
    named = dataclasses.replace(
        item.comparison,
        origins=("model.2",),
        notes=("what the forward launches changed since the baseline: new add in model.2.cv1", "kept"),
    )
    redactor = Redactor()
    done = redactor.comparison(named, redact.names_of(item.base, item.current))
    assert done.origins == (redactor.layer("model.2"),) and "model.2" not in str(done.origins)
    assert done.notes == (redact.REDACTED_NOTE, "kept")


def test_a_redacted_entry_keeps_no_host_id_of_an_appended_round() -> None:
    # a cold start's own runs of each runner that appended a round are keyed by host id: a redacted
    # results file would match the baseline's hosts by them
    from kernelgate.baseline.store import Entry

    m = slowed_item().current
    bench = {
        "name": "x",
        "extra_info": {"kernelgate_coldstart": {}, "kernelgate_coldstart_by_host": {"9f3a": {}}},
    }
    hidden = Redactor().entry(Entry("x", m, bench))
    assert "kernelgate_coldstart_by_host" not in hidden.benchmark["extra_info"]
    assert "kernelgate_coldstart" in hidden.benchmark["extra_info"]
