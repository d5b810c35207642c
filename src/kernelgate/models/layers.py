"""The top-level layers of a model: their names, types and groups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Layers:
    """The top-level layers of a model: name -> type (``model.10`` -> ``Upsample``), and optionally
    name -> layer group (``model.10`` -> ``neck``; see :func:`kernelgate.models.groups.groups_of`)."""

    types: Mapping[str, str]
    groups: Mapping[str, str] = field(default_factory=dict)

    def layer_of(self, module: str) -> str:
        parts = module.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.types:
                return candidate
        return module

    def type_of(self, layer: str) -> str:
        return self.types.get(layer, "")

    def adding(self, types: Mapping[str, str]) -> Layers:
        """These layers and ``types`` (name -> type: the stages or compiled region a step adds)."""
        return Layers({**self.types, **types}, self.groups)
