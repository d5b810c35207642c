"""Redaction for published artifacts: layer, type, module and kernel names become stable short hashes.

``model.2`` -> ``layer-1f3a9c0d``, ``C2f`` -> ``type-…``, ``model.2.cv1.bn`` -> ``module-…``, a
kernel's normalized name -> ``kernel-…``. The same name always gives the same hash (BLAKE2b, 32
bits), so reports of two pull requests stay comparable, and the names in the Markdown, HTML and
JSON reports match those in the redacted traces. Names that say nothing about a model
(``total``, ``input``, ``(unattributed)``, memcpy and memset) are kept.

The results file of a run (``.kernelgate/results/<arch>/0001_kernelgate.json``) is written the same
way (:meth:`Redactor.entry`), without the runner's host name (``machine_info.node``:
:func:`machine_info`); the trace excerpts lose the host name and the trace's path
(:data:`PRIVATE_TRACE_KEYS`, in :mod:`kernelgate.report.trace_store`). An unreliable measurement's
reasons that name a layer, module or kernel are replaced by a note.

Host fingerprints (:mod:`kernelgate.machine.fingerprint`) hold no host name, serial or UUID to remove:
a GPU is named by a hash of its UUID, also in committed baselines. Redacted, that hash is hashed again
as names are, so with ``KERNELGATE_REDACT_KEY`` a published report's host ids cannot be matched to
a baseline's.

An unkeyed hash of a guessable name (``model.2``) can be recovered by guessing; set
``KERNELGATE_REDACT_KEY`` to a private value to key the hash (the same key gives the same hashes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelgate.baseline import byhost
from kernelgate.baseline.reading import Entry
from kernelgate.config import Scope
from kernelgate.machine.fingerprint import HostFingerprint
from kernelgate.measure.results import LayerStat, Measurement
from kernelgate.models.groups import group_of
from kernelgate.verdict.compare import Comparison, Delta

KEPT = frozenset({"", "total", "input", "(unattributed)"})
KEPT_KERNEL_PREFIXES = ("Memcpy", "Memset")
KEY_VARIABLE = "KERNELGATE_REDACT_KEY"
KERNEL_SEPARATOR = " :: "
# what names the machine in pytest-benchmark's machine_info, and in a Chrome trace's top level
PRIVATE_MACHINE_KEYS = frozenset({"node"})
PRIVATE_TRACE_KEYS = frozenset({"host_name", "traceName"})
REDACTED_REASON = "(redacted: this reason named a layer, module or kernel)"
REDACTED_NOTE = "(redacted: this note named a layer, module or kernel)"
KERNEL_NAME_SHOWN = 80  # integrity.py names a kernel by its first 80 characters


def machine_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """pytest-benchmark's machine_info without the host name."""
    return {k: v for k, v in info.items() if k not in PRIVATE_MACHINE_KEYS}


def scrub(text: str, names: frozenset[str]) -> str:
    """``text``, or a note in its place where it names one of ``names`` (free text, such as a note or
    the same-host judge's reason, cannot be hashed name by name)."""
    return REDACTED_NOTE if any(n in text for n in names) else text


def names_of(*measurements: Measurement) -> frozenset[str]:
    """The layer, type, module and kernel names of ``measurements`` that redaction hides."""
    return frozenset(n for m in measurements for n in _names(m))


def _names(m: Measurement) -> set[str]:
    names = {lay.name for lay in m.layers} | {lay.type for lay in m.layers}
    for k in m.kernels:
        names |= {k.layer, k.module, k.name, k.name[:KERNEL_NAME_SHOWN]}
    return {n for n in names if n not in KEPT}


@dataclass(frozen=True)
class Redactor:
    key: bytes = b""

    @classmethod
    def from_environment(cls) -> Redactor:
        return cls(os.environ.get(KEY_VARIABLE, "").encode())

    def hashed(self, kind: str, name: str) -> str:
        if name in KEPT or (kind == "kernel" and name.startswith(KEPT_KERNEL_PREFIXES)):
            return name
        digest = hashlib.blake2b(f"{kind}\0{name}".encode(), digest_size=4, key=self.key).hexdigest()
        return f"{kind}-{digest}"

    def layer(self, name: str) -> str:
        return self.hashed("layer", name)

    def layer_type(self, name: str) -> str:
        return self.hashed("type", name)

    def module(self, name: str) -> str:
        return self.hashed("module", name)

    def kernel(self, name: str) -> str:
        return self.hashed("kernel", name)

    def kernel_key(self, key: str) -> str:
        """``module :: kernel`` (the identity of a kernel in a comparison)."""
        module, sep, name = key.partition(KERNEL_SEPARATOR)
        if not sep:
            return self.kernel(key)
        return f"{self.module(module)}{KERNEL_SEPARATOR}{self.kernel(name)}"

    def measurement(self, m: Measurement) -> Measurement:
        layers = tuple(
            LayerStat(self.layer(lay.name), self.layer_type(lay.type), lay.time) for lay in m.layers
        )
        kernels = tuple(
            dataclasses.replace(
                k, layer=self.layer(k.layer), module=self.module(k.module), name=self.kernel(k.name)
            )
            for k in m.kernels
        )
        # a layer keeps its group (stage names included) under its hashed name
        groups = {self.layer(lay.name): group_of(lay.name, m.groups) for lay in m.layers}
        names = _names(m)
        reasons = tuple(
            REDACTED_REASON if any(n in reason for n in names) else reason for reason in m.unreliable_reasons
        )
        hosts = tuple(h and self.host(h) for h in m.hosts)
        host_layers = tuple(
            LayerStat(self.layer(lay.name), self.layer_type(lay.type), lay.time) for lay in m.host_layers
        )
        host_calls = {self.layer(layer): dict(calls) for layer, calls in m.host_calls.items()}
        return dataclasses.replace(
            m, layers=layers, kernels=kernels, groups=groups, unreliable_reasons=reasons, hosts=hosts,
            host_layers=host_layers, host_calls=host_calls,
        )  # fmt: skip

    def host(self, h: HostFingerprint) -> HostFingerprint:
        """The GPU's id hashed again (keyed by ``KERNELGATE_REDACT_KEY`` where set); a host without
        one keeps its CPU, driver and id."""
        return h if h.gpu_id is None else dataclasses.replace(h, gpu_id=self.hashed("gpu", h.gpu_id))

    def entry(self, e: Entry) -> Entry:
        """A benchmark of the results file, its measurement redacted."""
        return Entry(e.fullname, self.measurement(e.measurement), byhost.redacted(e.benchmark))

    def delta(self, d: Delta) -> Delta:
        name = d.name
        if d.scope in (Scope.LAYER, Scope.HOST):
            name = self.layer(d.name)
        elif d.scope is Scope.KERNEL:
            name = self.kernel_key(d.name)
        return dataclasses.replace(d, name=name, layer=self.layer(d.layer))

    def comparison(self, c: Comparison, names: frozenset[str] = frozenset()) -> Comparison:
        """``c`` with hashed names; its notes and the deltas' notes that name one of ``names`` (the
        layers, modules and kernels of its measurements: an origin, a structural change) are replaced."""

        deltas = tuple(dataclasses.replace(self.delta(d), note=scrub(d.note, names)) for d in c.deltas)
        notes = tuple(scrub(n, names) for n in c.notes)
        return dataclasses.replace(
            c, deltas=deltas, notes=notes, origins=tuple(self.layer(o) for o in c.origins)
        )
