"""The first stage of the flow (measure -> baseline -> verdict -> report): measuring one benchmark:
wall-clock rounds through pytest-benchmark (``timing``), torch.profiler with one range per module
(``profile``), the trace (``trace``), every kernel attributed to its layer (``attribute``, ``graphs`` for
CUDA-graph replays, ``stages`` for pre/post-processing), the record with per-iteration samples
(``results``), whether it can be trusted (``integrity``), where the time goes (``timesplit``, ``grouped``)
and one round end to end (``pipeline``, ``execution``).

It imports ``machine`` and ``models`` below it, never ``baseline``, ``verdict``, ``report`` or above.
"""
