"""The machine a measurement runs on, below the flow (measure -> baseline -> verdict -> report).

It owns the GPU's identity and the baseline key (``identity``, ``visible``), the GPU's state now
(``state``), software versions and the recorded environment (``software``), which host measured a
round (``fingerprint``), what changed between two recorded environments (``envdiff``), each side of an
A/B in its own environment where base and head depend on other packages (``sideenv``), the CUDA JIT
cache folder (``jit_cache``), a GPU and CPU share per pytest-xdist worker (``pinning``), and
``kernelgate doctor`` with its facts and fitness rules (``doctor``, ``facts``, ``finding``,
``fitness``, ``checks_*``). It reads NVML (``nvml``) and never changes a GPU setting.

It imports nothing above it: not measure, baseline, verdict, report, coldstart, plugin or cli (the
layers contract in pyproject.toml checks this); what it needs from them is passed in, as
``doctor.gather`` takes the recorded cold-start cache size and the hosts that recorded a baseline.
"""
