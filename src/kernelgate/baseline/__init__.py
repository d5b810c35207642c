"""Baseline files: ``baselines/<arch-key>/0001_kernelgate.json`` in pytest-benchmark's format, their
schema, migration, integrity checks, locking and merging (``store``), and the names that become file
names (``names``).

It imports ``measure`` and below; never ``verdict``, ``report`` or above.
"""
