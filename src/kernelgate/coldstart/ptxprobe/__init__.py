"""The PTX probe: a small CUDA kernel set of kernelgate's own, shipped as PTX only, so that the driver
JIT-compiles it on the GPU (or takes it from its JIT cache) when a fresh process loads it.

``probe.cu`` (the kernels), ``build`` (``nvcc -ptx`` in the parent, before the children), ``driver``
(the child: ctypes on ``libcuda``, phase by phase). Its cold start is gated like a model's: with an
empty JIT cache, a warm one, and ``CUDA_CACHE_MAXSIZE`` too small to keep it.
"""
