//! Edits of the `cpairs` fixture (tests/fixtures/cpairs) shared by the end-to-end tests.

#![allow(dead_code)]

/// The hot line of `prog.c`: every value goes through the slow hash.
pub const HOT_LINE: &str = "        total += slow_hash(v);";

/// A real speedup: memoize the hash of the 1000 possible inputs (insert before `work`).
pub const MEMO: &str = "static unsigned long cached_hash(unsigned long v) {
    static unsigned long cache[1000];
    static int filled[1000];
    if (!filled[v]) {
        cache[v] = slow_hash(v);
        filled[v] = 1;
    }
    return cache[v];
}

static unsigned long work(";

/// The same memo with an off-by-one heap write that only the sanitizer lane sees.
pub const MEMO_OOB: &str = "static unsigned long *cache;

static unsigned long cached_hash(unsigned long v) {
    if (!cache) {
        cache = malloc(1000 * sizeof *cache);
        for (int i = 0; i <= 1000; i++) cache[i] = ~0UL;
    }
    if (cache[v] == ~0UL) cache[v] = slow_hash(v);
    return cache[v];
}

static unsigned long work(";
