"""Host fingerprints (kernelgate.machine.fingerprint): one per round, kept when rounds of several
hosts are appended, old baselines without them read as unknown hosts, the doctor and the plugin say
when this runner is none of the hosts, the report names them, redaction re-hashes the GPU's id."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, META, V8, entry, measurement
from fake_nvml import FAILS, FakeGpu, fake_pynvml
from real_data import BASE as REAL_BASELINE

from kernelgate import cli
from kernelgate.baseline import hosts as baseline_hosts
from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME, BaselineError
from kernelgate.config import GateConfig
from kernelgate.machine import fingerprint
from kernelgate.machine.finding import Level
from kernelgate.machine.fingerprint import HostFingerprint, RecordedHosts
from kernelgate.machine.fitness import diagnose, exit_code
from kernelgate.machine.identity import cpu_model, hashed_gpu_id, read_identity
from kernelgate.measure.results import Measurement, combine
from kernelgate.report import json as report_json
from kernelgate.report import markdown as report_markdown
from kernelgate.report.redact import Redactor
from kernelgate.verdict import diff
from kernelgate.verdict.compare import compare

XEON = "Intel(R) Xeon(R) Processor"
DRIVER = "580.159.04"
ADD = "kernelgate record --rounds 2 --append -- benchmarks"


def host(uuid: str = "GPU-aaaa", cpu: str = XEON, driver: str = DRIVER, **changes: Any) -> HostFingerprint:
    full = HostFingerprint(
        cpu=cpu,
        cpu_count=16,
        gpu="NVIDIA H200",
        gpu_id=hashed_gpu_id(uuid),
        driver=driver,
        cuda="13.0",
        torch="2.11.0+cu130",
        cudnn="91900",
        pcie_gen=5,
        pcie_width=16,
        sm_clock_max_mhz=1980,
        mem_clock_max_mhz=3201,
        power_limit_w=700.0,
    )
    return dataclasses.replace(full, **changes)


A, B, C = host("GPU-aaaa"), host("GPU-bbbb"), host("GPU-cccc")


def on(h: HostFingerprint | None, us: float = 100.0) -> Measurement:
    m = measurement({"model.0": us}, {"model.0.conv :: gemm": us})
    return dataclasses.replace(m, hosts=(h,) if h else ())


# --- the fingerprint --------------------------------------------------------------------------------


def test_a_fingerprint_survives_its_json_round_trip() -> None:
    for h in (A, HostFingerprint(cpu=XEON), host(power_limit_w=None, pcie_gen=None)):
        again = HostFingerprint.from_json(json.loads(json.dumps(h.to_json())))
        assert again == h and again.id == h.id
    # a fingerprint of an older kernelgate, with fewer fields: the missing ones are None
    assert HostFingerprint.from_json({"cpu": XEON, "gpu_id": A.gpu_id, "driver": DRIVER}).id == A.id


def test_the_host_id_is_stable_and_made_of_the_gpu_the_cpu_and_the_driver() -> None:
    assert A.id == "758429a8"  # a baseline recorded today names the same host tomorrow
    assert A.gpu_id == hashed_gpu_id("GPU-aaaa") == "cf50f1bf9438"
    same = host(cuda="12.8", torch="2.12.0", cudnn="92000", pcie_gen=1, pcie_width=8, power_limit_w=500.0)
    assert same.id == A.id  # software, link and limits are described, not identifying
    others = {B.id, host(cpu="AMD EPYC 9654").id, host(driver="590.10").id}
    assert len(others) == 3 and A.id not in others


def test_the_gpu_is_named_by_a_hash_of_its_uuid_never_by_the_uuid_or_serial(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uuid, serial = "GPU-5f1c2d9e-aaaa-bbbb-cccc-0123456789ab", "1654922012345"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(FakeGpu(uuid=uuid, serial=serial, pcie_gen=4)))
    identity = read_identity()
    assert identity is not None and identity.gpu_id == hashed_gpu_id(uuid)
    assert (identity.pcie_gen, identity.pcie_width) == (4, 16)
    recorded = fingerprint.this_round({"cpu": XEON, "torch": "2.11.0+cu130", "cuda": "13.0"}, gpu=True)
    assert recorded.gpu_id == identity.gpu_id and recorded.mem_clock_max_mhz == 3201
    text = json.dumps(recorded.to_json())
    assert uuid not in text and serial not in text and uuid[4:12] not in text
    # no UUID: the serial's hash; neither: no GPU id
    for readable, expected in ((serial, hashed_gpu_id(None, serial)), (FAILS, None)):
        monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(FakeGpu(uuid=FAILS, serial=readable)))
        identity = read_identity()
        assert identity is not None and identity.gpu_id == expected
    assert hashed_gpu_id(None, serial) not in (None, hashed_gpu_id(uuid))
    assert fingerprint.this_round({}, gpu=False) == HostFingerprint(
        cpu=cpu_model(), cpu_count=recorded.cpu_count
    )


@pytest.mark.parametrize(
    "edit",
    [{"id": "00000000"}, {"gpu_id": "edited"}, {"cpu": ""}, {"cpu_count": "16"}, {"pcie_gen": True}],
    ids=["id", "gpu_id-edited", "no-cpu", "count-text", "gen-bool"],
)
def test_a_malformed_or_hand_edited_fingerprint_is_refused(tmp_path: Path, edit: dict[str, Any]) -> None:
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, [entry(V8, on(A))], arch=ARCH, **META)
    data = json.loads(path.read_text())
    data["benchmarks"][0]["extra_info"]["kernelgate"]["hosts"][0].update(edit)
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=r"benchmarks\[0\] is malformed .*host fingerprint"):
        baseline.load(path)


def test_a_list_of_hosts_that_is_not_one_per_round_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, [entry(V8, on(A))], arch=ARCH, **META)
    data = json.loads(path.read_text())
    data["benchmarks"][0]["extra_info"]["kernelgate"]["hosts"].append(None)
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=r"one host fingerprint \(or null\) for each of the 1 round"):
        baseline.load(path)


# --- baselines: old entries, appending from several hosts ---------------------------------------------


def test_old_entries_without_fingerprints_are_unknown_hosts_and_stay_as_they_were(tmp_path: Path) -> None:
    (old,) = baseline.load(REAL_BASELINE).values()
    rounds = len(old.measurement.total.rounds)
    assert rounds == 3 and old.measurement.hosts == ()
    assert old.hosts == RecordedHosts(unknown=rounds)
    assert "hosts" not in old.measurement.to_json()  # saved again, an old entry gains no key
    # a round of a host appended to it: the old rounds stay unknown, the new one is known
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, [entry(V8, old.measurement)], arch=ARCH, **META)
    baseline.save(path, [entry(V8, old.measurement)], arch=ARCH, append=True, **META)
    raw = json.loads(path.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]
    assert "hosts" not in raw and len(raw["total_us"]["rounds"]) == 2 * rounds
    # a round of a known host after them: the old rounds stay unknown, one null each
    merged = combine([old.measurement, on(A)])
    assert merged.round_hosts == (None, None, None, A)
    assert [h and h["id"] for h in merged.to_json()["hosts"]] == [None, None, None, A.id]
    assert Measurement.from_json(json.loads(json.dumps(merged.to_json()))).hosts == merged.hosts


def test_a_round_from_a_second_host_is_appended_and_both_fingerprints_are_kept(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    assert baseline.save(path, [entry(V8, on(A))], arch=ARCH, **META) == []
    assert baseline.save(path, [entry(V8, on(B, 101.0))], arch=ARCH, append=True, **META) == []
    assert baseline.save(path, [entry(V8, on(A, 100.5))], arch=ARCH, append=True, **META) == []
    (saved,) = baseline.load(path, ARCH).values()
    assert saved.measurement.round_hosts == (A, B, A)
    assert saved.hosts == RecordedHosts((A, B), (2, 1), 0)
    listed = saved.hosts.to_json()["hosts"]
    assert [(h["id"], h["rounds"]) for h in listed] == [(A.id, 2), (B.id, 1)]
    assert listed[1]["description"].startswith(f"host {B.id}: GPU NVIDIA H200 #{B.gpu_id}, CPU {XEON}")
    raw = json.loads(path.read_text())["benchmarks"][0]["extra_info"]["kernelgate"]["hosts"]
    assert [h["id"] for h in raw] == [A.id, B.id, A.id]
    # a pytest-xdist worker sends its entries as JSON: the hosts travel with them
    assert baseline.Entry.from_json(json.loads(json.dumps(saved.to_json()))).measurement.hosts == (A, B, A)


def test_a_round_of_another_host_that_disagrees_is_refused_saying_so_and_kept_when_asked(
    tmp_path: Path,
) -> None:
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, [entry(V8, on(A))], arch=ARCH, **META)
    baseline.save(path, [entry(V8, on(A, 101.0))], arch=ARCH, append=True, **META)
    before = path.read_text()
    with pytest.raises(BaselineError) as info:
        baseline.save(path, [entry(V8, on(B, 200.0))], arch=ARCH, append=True, **META)
    message = str(info.value)
    assert "round(s) 3 disagree with the others beyond what noise explains" in message
    assert (
        f"These rounds come from different hosts (rounds 1, 2: {A.short()}; round 3: {B.short()})" in message
    )
    assert "round_tolerance is not widened for it" in message
    assert f"--kernelgate-keep-round 'another host: {B.id}'" in message
    assert path.read_text() == before  # the tolerance was not loosened: nothing saved
    notes = baseline.save(
        path, [entry(V8, on(B, 200.0))], arch=ARCH, append=True, keep_round=f"another host: {B.id}", **META
    )
    assert notes[0].startswith(f"yolov8n-fp16-bs1-640: kept round(s) [3] (another host: {B.id})")
    (kept,) = baseline.load(path, ARCH).values()
    assert kept.measurement.round_hosts == (A, A, B)
    # rounds of one host that disagree say nothing about hosts; an unknown host "may" be another
    one = combine([on(A), on(A, 200.0)])
    assert baseline.rounds.other_hosts_note(one, [2]) == ""
    mixed = baseline.rounds.other_hosts_note(combine([on(None), on(B, 200.0)]), [2])
    assert mixed.startswith(
        "These rounds may come from different hosts (round 1: a host without a fingerprint"
    )


# --- this runner against the hosts of the baseline ----------------------------------------------------


def test_the_runner_is_checked_against_every_host_of_the_baseline_file() -> None:
    entries = {"a": entry("a", combine([on(A), on(A), on(B)])), "b": entry("b", combine([on(None), on(A)]))}
    recorded = baseline_hosts.of_entries(entries.values())
    assert recorded == RecordedHosts((A, B), (2, 1), 1)
    # one recording run measures every configuration: 3 rounds of 10 configurations are 3 rounds, not 30
    ten = {str(i): entry(str(i), combine([on(A), on(A), on(A)])) for i in range(10)}
    assert baseline_hosts.of_entries(ten.values()) == RecordedHosts((A,), (3,), 0)
    assert baseline_hosts.runner_notes(entries, [on(B)], "baselines/sm90-nvidia-h200/") == []
    (note,) = baseline_hosts.runner_notes(entries, [on(C), on(C)], "baselines/sm90-nvidia-h200/")
    assert note.startswith(
        f"kernelgate: this runner ({C.short()}) is none of the 2 host(s) that recorded "
        f"baselines/sm90-nvidia-h200/ ({A.short()} (2 rounds); {B.short()} (1 round); "
        "1 round of an unknown host"
    )
    assert note.endswith(
        f"verdicts come from the same-host A/B (confirm = true, the default). To add this runner: {ADD}"
    )
    assert baseline_hosts.runner_notes({"old": entry("old", on(None))}, [on(C)], "x/") == []  # nothing known


def doctor_facts(runner: HostFingerprint, recorded: RecordedHosts | None) -> Any:
    from test_doctor import healthy  # the doctor's made-up facts of an idle H200

    facts = healthy(cpu=runner.cpu, cpu_count=runner.cpu_count, baseline_hosts=recorded)
    return dataclasses.replace(facts, identity=dataclasses.replace(facts.identity, gpu_id=runner.gpu_id))


def test_the_doctor_warns_when_this_runner_is_none_of_the_hosts_of_the_baseline() -> None:
    two = RecordedHosts.of([A, A, B])
    (ok,) = [f for f in diagnose(doctor_facts(B, two)) if f.check == "host"]
    assert ok.level is Level.OK and f"this runner (host {B.id}: GPU NVIDIA H200 #{B.gpu_id}" in ok.message
    assert "is one of the 2 host(s) that recorded baselines/sm90-nvidia-h200/" in ok.message
    findings = diagnose(doctor_facts(C, two))
    (warn,) = [f for f in findings if f.check == "host"]
    assert warn.level is Level.WARN
    assert warn.message.startswith(f"this runner ({C.short()}) is none of the 2 host(s) that recorded ")
    assert (
        "the stored-baseline screen will see a host offset; verdicts come from the same-host A/B"
        in warn.message
    )
    assert warn.fix.startswith(
        f"to add this runner: {ADD} (two rounds of its own: the screen then compares with them, "
        "cold starts included)"
    )
    assert exit_code(findings) == 0 and exit_code(findings, strict=True) == 1
    (unknown,) = [f for f in diagnose(doctor_facts(C, RecordedHosts(unknown=3))) if f.check == "host"]
    assert unknown.level is Level.INFO and "whether this runner" in unknown.message
    assert [f for f in diagnose(doctor_facts(C, None)) if f.check == "host"] == []  # no baseline


@pytest.mark.parametrize("uuid, warns", [("GPU-bbbb", False), ("GPU-cccc", True)])
def test_kernelgate_doctor_on_a_baseline_of_two_hosts(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    uuid: str,
    warns: bool,
) -> None:
    here = {"cpu": cpu_model(), "cpu_count": None, "torch": None, "cuda": None, "cudnn": None}
    first, second = host("GPU-aaaa", **here), host("GPU-bbbb", **here)
    path = tmp_path / ARCH / FILE_NAME
    baseline.save(path, [entry(V8, on(first))], arch=ARCH, **META)
    baseline.save(path, [entry(V8, on(second))], arch=ARCH, append=True, **META)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(FakeGpu(uuid=uuid)))
    cli.main(["doctor", "--baseline-dir", str(tmp_path)])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if " host " in line[:21]]
    assert lines and lines[0].startswith("warn  host " if warns else "ok    host ")
    assert (f"fix: to add this runner: {ADD}" in out) is warns
    assert (f"is none of the 2 host(s) that recorded {tmp_path}/{ARCH}/" in " ".join(out.split())) is warns
    cli.main(["doctor", "--baseline-dir", str(tmp_path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [h["id"] for h in data["facts"]["baseline_hosts"]["hosts"]] == [first.id, second.id]
    assert data["facts"]["host"]["id"] == host(uuid, cpu=cpu_model()).id


# --- report and redaction -----------------------------------------------------------------------------


def test_the_report_names_the_baseline_hosts_and_this_runner_in_one_line() -> None:
    base, now = combine([on(A), on(None)]), on(C, 100.0)
    d = diff.build(compare(base, now, GateConfig()), base, now)
    text = report_markdown.render([d])
    assert (
        f"Hosts: the baseline's `{A.id}` and rounds without a fingerprint; this runner's `{C.id}` (not among"
        in text
    )
    document = report_json.document([d])["hosts"]
    assert [h["id"] for h in document["baseline"]["hosts"]] == [A.id] and document["baseline"][
        "unknown_rounds"
    ] == 1
    assert [h["id"] for h in document["runner"]["hosts"]] == [C.id]
    same = diff.build(compare(base, on(A), GateConfig()), base, on(A))
    assert f"this runner's `{A.id}` (one of them)." in report_markdown.render([same])
    old = diff.build(compare(on(None), on(None), GateConfig()), on(None), on(None))
    assert "Hosts:" not in report_markdown.render([old])  # no fingerprint on either side: no line


def test_redaction_hashes_the_gpu_id_again_and_the_fingerprint_stays_valid() -> None:
    m = combine([on(A), on(None)])
    redacted = Redactor(b"private").measurement(m)
    first = redacted.hosts[0]
    assert first is not None and first.gpu_id != A.gpu_id and first.gpu_id.startswith("gpu-")
    assert first.id != A.id and redacted.hosts[1] is None
    assert dataclasses.replace(first, gpu_id=A.gpu_id) == A  # nothing else changes
    again = Measurement.from_json(json.loads(json.dumps(redacted.to_json())))  # its id matches its fields
    assert again.hosts == redacted.hosts
    assert Redactor(b"private").measurement(on(A)).hosts == redacted.hosts[:1]  # stable: sides still match


# --- end to end: the plugin records each round's host and notes a runner that is none of them -------

SUITE = """
import torch
from kernelgate.models.layers import Layers


def test_tiny(kernelgate):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
    kernelgate.module(net, torch.rand(1, 3, 32, 32), Layers({"0": "Conv2d", "1": "ReLU"}), name="tiny")
"""
LOOSE = """
[tool.kernelgate]
layer_threshold = "1000%"
kernel_threshold = "1000%"
total_threshold = "1000%"
round_tolerance = "1000%"
"""
ARGS = (
    "-p",
    "no:cacheprovider",
    "--kernelgate-device=cpu",
    "--benchmark-min-rounds=2",
    "--kernelgate-no-confirm",
)


def test_the_plugin_records_each_rounds_host_and_notes_a_runner_that_is_none_of_them(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makepyprojecttoml(LOOSE)  # CPU op times swing between processes: hosts are what is tested
    pytester.runpytest(*ARGS, "--kernelgate-save").assert_outcomes(passed=1)
    pytester.runpytest(*ARGS, "--kernelgate-save", "--kernelgate-append").assert_outcomes(passed=1)
    (path,) = pytester.path.glob("baselines/cpu-*/0001_kernelgate.json")
    (saved,) = baseline.load(path).values()
    this = saved.measurement.round_hosts[0]
    assert this is not None and this.cpu == cpu_model() and this.gpu is None  # a CPU run: no GPU
    assert saved.measurement.round_hosts == (this, this)
    quiet = pytester.runpytest(*ARGS)
    quiet.assert_outcomes(passed=1)
    assert "is none of the" not in quiet.stdout.str()
    # the rounds were recorded by another runner: this one is none of its hosts
    other = HostFingerprint(cpu="AMD EPYC 9654 96-Core Processor", cpu_count=192)
    data = json.loads(path.read_text())
    data["benchmarks"][0]["extra_info"]["kernelgate"]["hosts"] = [other.to_json(), other.to_json()]
    path.write_text(json.dumps(data))
    noted = pytester.runpytest(*ARGS)
    noted.assert_outcomes(passed=1)
    text = " ".join(noted.stdout.str().split())
    assert f"kernelgate: this runner (host {this.id}: no GPU, CPU {cpu_model()}" in text
    assert (
        f"is none of the 1 host(s) that recorded baselines/{path.parent.name}/ ({other.short()} (2 rounds))"
        in text
    )
    # the run's own selection: pytest ran the folder it was started in, so `.` (not benchmarks/)
    assert "To add this runner: kernelgate record --rounds 2 --append -- ." in text
    # one round of another runner, one of this one: the screen compares with this runner's round
    data["benchmarks"][0]["extra_info"]["kernelgate"]["hosts"] = [other.to_json(), this.to_json()]
    path.write_text(json.dumps(data))
    own = pytester.runpytest(*ARGS, "--kernelgate-report-dir=report-own")
    own.assert_outcomes(passed=1)
    assert "is none of the" not in own.stdout.str()
    said = (pytester.path / "report-own" / "report-data.json").read_text()  # the comparison's notes
    assert f"screened against this runner's own 1 of the baseline's 2 rounds (host {this.id}; the" in said


def test_kernelgate_record_append_adds_every_round_where_plain_record_replaces_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelgate.verdict import ab

    firsts: list[bool] = []
    monkeypatch.setattr(ab, "pytest_round", lambda tree, where, first, out, args: firsts.append(first) or 0)
    assert cli.main(["record", "--rounds", "2", "--", "benchmarks"]) == 0
    assert cli.main(["record", "--append", "--rounds", "2", "--", "benchmarks"]) == 0
    assert firsts == [True, False, False, False]
