"""Items a baseline entry keeps per host in its pytest-benchmark ``extra_info``: a key of
kernelgate's (``kernelgate_…_by_host``) maps host ids to what each runner that appended a round
recorded of its own (a cold start's runs: :mod:`kernelgate.coldstart.verdict`). The entry's other
fields stay its first round's; these maps are merged, not replaced, when a round is appended
(:func:`kernelgate.baseline.store.merge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX, BY_HOST = "kernelgate_", "_by_host"


def is_by_host(key: str) -> bool:
    """Whether ``extra_info[key]`` is one of kernelgate's maps by host (a user's own keys are not)."""
    return key.startswith(PREFIX) and key.endswith(BY_HOST)


def without(benchmark: Mapping[str, Any], host: str | None) -> Mapping[str, Any]:
    """``benchmark`` (pytest-benchmark's fields) without host ``host``'s items in the maps by host: a
    new entry's first round is its own fields already."""
    extra = benchmark.get("extra_info") or {}
    maps = {k: v for k, v in extra.items() if is_by_host(k) and isinstance(v, Mapping)}
    if host is None or not any(host in v for v in maps.values()):
        return benchmark
    rest = {k: v for k, v in extra.items() if k not in maps}
    for key, items in maps.items():
        left = {h: item for h, item in items.items() if h != host}
        if left:
            rest[key] = left
    return {**benchmark, "extra_info": rest}


def redacted(benchmark: Mapping[str, Any]) -> Mapping[str, Any]:
    """``benchmark`` without the maps by host: their keys are host ids, which a redacted file hides."""
    extra = benchmark.get("extra_info") or {}
    if not any(is_by_host(k) for k in extra):
        return benchmark
    return {**benchmark, "extra_info": {k: v for k, v in extra.items() if not is_by_host(k)}}


def merged(old: Mapping[str, Any], new: Mapping[str, Any], first: str | None) -> Mapping[str, Any]:
    """``old``'s pytest-benchmark fields, with each ``extra_info`` mapping by host id (a key of
    :func:`is_by_host`, e.g. a cold start's own runs on each runner that appended a round) updated by
    ``new``'s: the appending host's item replaces its earlier one, the other hosts' stay. Host
    ``first``, whose round's fields the entry keeps, gets no item (``kernelgate record --rounds N``
    on one host appends to its own first round)."""
    old_extra, new_extra = old.get("extra_info") or {}, new.get("extra_info") or {}
    maps = {
        k: {h: item for h, item in v.items() if h != first}
        for k, v in new_extra.items()
        if is_by_host(k) and isinstance(v, Mapping)
    }
    maps = {k: v for k, v in maps.items() if v}
    if not maps:
        return old
    extra = dict(old_extra)
    for key, items in maps.items():
        before = extra.get(key)
        extra[key] = {**(before if isinstance(before, Mapping) else {}), **items}
    return {**old, "extra_info": extra}
