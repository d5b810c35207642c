"""The second stage of the flow (measure -> baseline -> verdict -> report): baseline files:
``baselines/<arch-key>/0001_kernelgate.json`` in pytest-benchmark's format, their schema, migration and
checked reading into entries (``reading``), merging and saving (``store``), parsing and summaries
(``values``), atomic writes, the lock, leftovers and links (``files``), rounds that disagree (``rounds``),
the hosts that recorded a baseline (``hosts``), the error and its fix commands (``errors``), and the names
that become file names (``names``).

It imports ``measure`` and below; never ``verdict``, ``report`` or above.
"""
