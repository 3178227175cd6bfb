/* A synthetic workload whose run time is under the caller's control: it spins for the number of
 * iterations given on the command line and prints a checksum that depends on every iteration, so
 * the compiler cannot drop the loop and the output is deterministic. Used by `evo bench`'s demo and
 * by the calibration benchmark (benches/calibration.rs). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: spin ITERATIONS\n");
        return 2;
    }
    char *end = NULL;
    unsigned long long n = strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0') {
        fprintf(stderr, "spin: `%s` is not a number of iterations\n", argv[1]);
        return 2;
    }
    uint64_t x = 88172645463325252ULL;
    for (unsigned long long i = 0; i < n; i++) {
        /* xorshift64: cheap, serial, not vectorizable, so time is linear in n. */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    printf("%llu\n", (unsigned long long)x);
    return 0;
}
