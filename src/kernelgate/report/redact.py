"""Redaction for published artifacts: layer, type, module and kernel names become stable short hashes.

``model.2`` -> ``layer-1f3a9c0d``, ``C2f`` -> ``type-…``, ``model.2.cv1.bn`` -> ``module-…``, a
kernel's normalized name -> ``kernel-…``. The same name always gives the same hash (BLAKE2b, 32
bits), so reports of two pull requests stay comparable, and the names in the Markdown, HTML and
JSON reports match those in the redacted traces. Names that say nothing about a model
(``total``, ``input``, ``(unattributed)``, memcpy and memset) are kept.

An unkeyed hash of a guessable name (``model.2``) can be recovered by guessing; set
``KERNELGATE_REDACT_KEY`` to a private value to key the hash (the same key gives the same hashes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass

from kernelgate.config import Scope
from kernelgate.measure.results import LayerStat, Measurement
from kernelgate.models.groups import group_of
from kernelgate.verdict.compare import Comparison, Delta

KEPT = frozenset({"", "total", "input", "(unattributed)"})
KEPT_KERNEL_PREFIXES = ("Memcpy", "Memset")
KEY_VARIABLE = "KERNELGATE_REDACT_KEY"
KERNEL_SEPARATOR = " :: "


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
        return dataclasses.replace(m, layers=layers, kernels=kernels, groups=groups)

    def delta(self, d: Delta) -> Delta:
        name = d.name
        if d.scope is Scope.LAYER:
            name = self.layer(d.name)
        elif d.scope is Scope.KERNEL:
            name = self.kernel_key(d.name)
        return dataclasses.replace(d, name=name, layer=self.layer(d.layer))

    def comparison(self, c: Comparison) -> Comparison:
        return dataclasses.replace(c, deltas=tuple(self.delta(d) for d in c.deltas))
