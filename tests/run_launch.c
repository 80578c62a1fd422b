/*
 * run_launch: a plain CUDA program (no umadv code) for
 * tests/test_run_launch_hooks.sh: N calls of cudaLaunchKernel whose grid
 * shapes follow a loop of five ("loop") or never repeat ("random"). The
 * function launched is no kernel, so CUDA refuses every launch (without
 * a GPU too): what matters is what umadv's launch hooks see. Prints how
 * many launches CUDA answered with each status, the same with and
 * without umadv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static void not_a_kernel(void)
{
}

int main(int argc, char **argv)
{
    unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0, failed = 0;
    int loop = argc > 1 && strcmp(argv[1], "loop") == 0;
    unsigned long long x = 88172645463325252ull;
    cudaError_t first = cudaSuccess;

    if (argc != 3 || (!loop && strcmp(argv[1], "random") != 0)) {
        fprintf(stderr, "usage: run_launch loop|random N\n");
        return 2;
    }
    for (unsigned k = 0; k < n; k++) {
        dim3 grid = {1 + k % 5, 1, 1}, block = {32, 1, 1};
        cudaError_t err;

        if (!loop) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            grid.x = 1 + (unsigned)(x % 100000);
        }
        err = cudaLaunchKernel((const void *)not_a_kernel, grid, block, NULL, 0, 0);
        if (err != cudaSuccess && failed++ == 0)
            first = err;
    }
    printf("launches %u refused %u first %d\n", n, failed, (int)first);
    return 0;
}
