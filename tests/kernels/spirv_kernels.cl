/* OpenCL C that the offload tests compile to SPIR-V (clang's 64-bit SPIR, then LLVM's
 * translator), as a SYCL or OpenCL toolchain hands a program on. */
__kernel void scaled_add(__global const float *a, __global const float *b, __global float *c,
                         float k, uint n) {
    size_t i = get_global_id(0);
    if (i < n) c[i] = a[i] * k + b[i];
}

__kernel void group_sums(__global const int *in, __global int *out, __local int *scratch) {
    size_t l = get_local_id(0);
    scratch[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[get_group_id(0)] = scratch[0];
}

__kernel void from_an_integer(ulong where) { *(__global int *)where = 7; }
