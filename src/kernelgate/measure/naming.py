"""Short names of kernels and modules, as every report shows them; module names in profiler ranges.

The profiler's trace writer (Kineto) does not keep every name as given: it turns ``\\`` into ``/``
(so ``model.1.a\\b`` came back as ``model.1.a/b``, another module), ``"`` into ``'``, drops line
breaks and names a range with any other control or non-ASCII character ``unknown``. So a module's
range is named by :func:`range_name` (percent-encoding of ``\\``, ``/``, ``%``, ``"`` and of every
character outside printable ASCII, reversible) and :func:`module_of_range` decodes it when the trace
is read; the usual module names (``model.22.cv2.0.0.conv``) are left as they are.
"""

from __future__ import annotations

import string
from urllib.parse import quote, unquote

# printable ASCII that the trace keeps as it is; everything else is percent-encoded
RANGE_SAFE = "".join(c for c in string.punctuation + " " if c not in '\\/%"')


def kernel_label(name: str) -> str:
    """``at::native::batch_norm_transform_input_kernel<c10::Half, …>`` -> its plain name."""
    head = name.split("<", 1)[0].strip()
    return head.rsplit("::", 1)[-1] or name


def module_label(module: str, layer: str) -> str:
    """``model.2.cv1.bn`` in layer ``model.2`` -> ``cv1.bn``; the layer itself stays as it is."""
    if module.startswith(layer + "."):
        return module[len(layer) + 1 :]
    return module


def range_name(module: str) -> str:
    """A module's name as its profiler range carries it (after the ``kg/`` prefix)."""
    return quote(module, safe=RANGE_SAFE)


def module_of_range(text: str) -> str:
    """The module's name back from its range (the inverse of :func:`range_name`)."""
    return unquote(text)
