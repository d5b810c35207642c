// kernelgate's PTX-JIT probe (kernelgate.coldstart.ptxprobe): kernels built as PTX only, so that the
// driver JIT-compiles them when the module is loaded, or takes them from its JIT cache
// (CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE).
//
// build.py includes this file and instantiates KG_PROBE_KERNEL(0) ... KG_PROBE_KERNEL(N - 1), then
// runs `nvcc -ptx -arch=compute_XY`: N sets how long the JIT takes (ptxas 13.0 for sm_90 on a 2-core
// x86 CI machine: 0.93 s and a 393 KiB cubin for N = 4). Each kernel is KG_PROBE_UNROLL rounds of
// dependent FMAs that nvcc unrolls (it stops unrolling above about 4096), on values it cannot fold.
#ifndef KG_PROBE_UNROLL
#define KG_PROBE_UNROLL 1024
#endif

template <int N>
__device__ __forceinline__ void kg_probe_rounds(float& a, float& b, float& c) {
#pragma unroll
  for (int k = 0; k < N; ++k) {
    a = fmaf(a, b, c + k);
    b = fmaf(b, c, a - k);
    c = fmaf(c, a, b * 0.5f);
  }
}

// out[i] = f(in[i]) for i < n; kernel I differs from the others in its constants, so none is merged
#define KG_PROBE_KERNEL(I)                                                        \
  extern "C" __global__ void kg_probe_##I(float* out, const float* in, int n) {   \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                \
    if (i >= n) return;                                                           \
    float a = in[i], b = a + (I + 1), c = a * 0.25f;                              \
    kg_probe_rounds<KG_PROBE_UNROLL>(a, b, c);                                    \
    out[i] = a + b + c;                                                           \
  }
