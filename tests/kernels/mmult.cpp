// Kernels of the Vitis style for the emulated card, built by the tests with
// `accelhost::xclbin::kernels::build_c` (as `accelhost xclbin build` does).
//
// mmult: c = a x b for size x size matrices of int (size <= MAX_SIZE). Each matrix is read
// into a local buffer first, multiplied there and written back in one pass, the shape HLS
// wants for burst transfers; the pragmas say so to HLS and are ignored here.
//
// forever: spins until *flag is non-zero (never, in the tests): a launch that only the
// card's kernel deadline ends.

#define MAX_SIZE 64

extern "C" {

void mmult(const int *a, const int *b, int *c, int size) {
#pragma HLS INTERFACE m_axi port = a offset = slave bundle = gmem
#pragma HLS INTERFACE m_axi port = b offset = slave bundle = gmem
#pragma HLS INTERFACE m_axi port = c offset = slave bundle = gmem
#pragma HLS INTERFACE s_axilite port = size
#pragma HLS INTERFACE s_axilite port = return
    int local_a[MAX_SIZE * MAX_SIZE];
    int local_b[MAX_SIZE * MAX_SIZE];
    int local_c[MAX_SIZE * MAX_SIZE];
#pragma HLS ARRAY_PARTITION variable = local_b dim = 1 cyclic factor = 16
    if (size < 0 || size > MAX_SIZE) return;
    const int cells = size * size;
load:
    for (int i = 0; i < cells; i++) {
#pragma HLS PIPELINE II = 1
        local_a[i] = a[i];
        local_b[i] = b[i];
    }
multiply:
    for (int row = 0; row < size; row++) {
        for (int col = 0; col < size; col++) {
#pragma HLS PIPELINE II = 1
            int sum = 0;
            for (int k = 0; k < size; k++) sum += local_a[row * size + k] * local_b[k * size + col];
            local_c[row * size + col] = sum;
        }
    }
store:
    for (int i = 0; i < cells; i++) {
#pragma HLS PIPELINE II = 1
        c[i] = local_c[i];
    }
}

void forever(const volatile int *flag) {
    while (*flag == 0) {
    }
}
}
