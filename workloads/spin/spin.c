/* A synthetic workload whose run time is under the caller's control: it spins for the number of
 * iterations given on the command line, starting from a state derived from the optional seed, and
 * prints a checksum that depends on every iteration and on the seed, so the compiler cannot drop
 * the loop, the output is deterministic for a seed, and a run given a fresh seed cannot print an
 * answer stored by an earlier run. Used by `evo bench`'s demo and by the calibration benchmark
 * (benches/calibration.rs).
 *
 *   spin ITERATIONS [SEED]      (SEED defaults to 0) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int parse(const char *s, unsigned long long *out) {
    char *end = NULL;
    *out = strtoull(s, &end, 10);
    return end == s || *end != '\0';
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: spin ITERATIONS [SEED]\n");
        return 2;
    }
    unsigned long long n = 0, seed = 0;
    if (parse(argv[1], &n)) {
        fprintf(stderr, "spin: `%s` is not a number of iterations\n", argv[1]);
        return 2;
    }
    if (argc == 3 && parse(argv[2], &seed)) {
        fprintf(stderr, "spin: `%s` is not a seed\n", argv[2]);
        return 2;
    }
    /* xorshift64 must not start at 0; mix the seed into a nonzero state. */
    uint64_t x = 88172645463325252ULL ^ (seed * 0x9E3779B97F4A7C15ULL);
    if (x == 0) {
        x = 88172645463325252ULL;
    }
    for (unsigned long long i = 0; i < n; i++) {
        /* xorshift64: cheap, serial, not vectorizable, so time is linear in n. */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    printf("seed %llu iterations %llu checksum %llu\n", seed, n, (unsigned long long)x);
    return 0;
}
