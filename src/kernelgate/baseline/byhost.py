"""Items a baseline entry keeps per host in its pytest-benchmark ``extra_info``: a key ending in
``_by_host`` maps host ids to what each runner that appended a round recorded of its own (a cold start's
runs: :mod:`kernelgate.coldstart.verdict`). The entry's other fields stay its first round's; these maps
are merged, not replaced, when a round is appended (:func:`kernelgate.baseline.store.merge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BY_HOST = "_by_host"


def merged(old: Mapping[str, Any], new: Mapping[str, Any], first: str | None) -> Mapping[str, Any]:
    """``old``'s pytest-benchmark fields, with each ``extra_info`` mapping by host id (a key ending in
    ``_by_host``, e.g. a cold start's own runs on each runner that appended a round) updated by
    ``new``'s: the appending host's item replaces its earlier one, the other hosts' stay. Host
    ``first``, whose round's fields the entry keeps, gets no item (``kernelgate record --rounds N``
    on one host appends to its own first round)."""
    old_extra, new_extra = old.get("extra_info") or {}, new.get("extra_info") or {}
    maps = {
        k: {h: item for h, item in v.items() if h != first}
        for k, v in new_extra.items()
        if k.endswith(BY_HOST) and isinstance(v, Mapping)
    }
    maps = {k: v for k, v in maps.items() if v}
    if not maps:
        return old
    extra = dict(old_extra)
    for key, items in maps.items():
        before = extra.get(key)
        extra[key] = {**(before if isinstance(before, Mapping) else {}), **items}
    return {**old, "extra_info": extra}
