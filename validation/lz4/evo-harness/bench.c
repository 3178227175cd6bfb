/*
 * evo's timed harness for lz4's block API (validation/lz4, docs/validation.md).
 *
 * Not part of lz4: the workload copies it into every tree as an overlay and links it against the
 * tree's lib/liblz4.a. A run
 *
 *   1. builds a corpus of --kib KiB from --seed (see make_corpus: a word-salad text part and a
 *      part of fixed-width records with runs of repeated bytes, in --mix eighths of text; --runs
 *      of every 64 record slots, default 1, are a run of a 1-, 2-, 4- or 8-byte pattern);
 *   2. --mode compress: every pass stamps pass-dependent words into a copy of the corpus (64
 *      places spread over it), compresses it with LZ4_compress_fast(--accel) and folds the
 *      compressed bytes into the digest; the first and last pass are decompressed and compared;
 *      --mode decompress: the corpus is stamped and compressed once per "round" of 64 passes, and
 *      each pass decompresses the round's stream and folds every decompressed byte into the digest;
 *   3. prints the seed, the mode, the total size handled and two 64-bit digests.
 *
 *   evo-bench run --seed N [--kib K] [--passes P] [--mode compress|decompress] [--accel A] [--mix M] [--runs R]
 *   evo-bench selftest
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lz4.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t pick(uint64_t *s, uint32_t n) { return (uint32_t)(splitmix(s) % n); }

/* Two running 64-bit sums over 8-byte words, each word multiplied and rotated: enough to tell
 * two byte strings apart, not meant to be strong. */
struct digest { uint64_t a, b, n; };

static void fold(struct digest *d, const uint8_t *p, size_t len)
{
	size_t i = 0;
	uint64_t w;
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		d->a = ((d->a ^ w) * 0xFF51AFD7ED558CCDull);
		d->a = (d->a << 31) | (d->a >> 33);
		d->b += (w ^ (d->b >> 29)) * 0xC4CEB9FE1A85EC53ull + 0x2545F4914F6CDD1Dull;
	}
	w = 0;
	memcpy(&w, p + i, len - i);
	d->a = ((d->a ^ w ^ (uint64_t)len) * 0xFF51AFD7ED558CCDull);
	d->b += (w + (uint64_t)len) * 0xC4CEB9FE1A85EC53ull;
	d->n += len;
}

static const char *const syllables[] = {
	"ka", "ro", "min", "tel", "sa", "ve", "dor", "pi", "lun", "ge", "as", "tro", "ne", "qui",
	"bal", "fe", "or", "us", "im", "pra", "do", "lec", "ti", "ma", "zen", "ho", "ul", "ber",
};

/* The text part: words of 1-4 syllables from a seeded vocabulary of 600, drawn so that low
 * indices are much more common (roughly Zipf), with punctuation and line breaks. */
static size_t make_text(uint8_t *out, size_t len, uint64_t *s)
{
	char vocab[600][16];
	size_t v, o = 0;
	int nsyl = (int)(sizeof(syllables) / sizeof(syllables[0]));
	for (v = 0; v < 600; v++) {
		int k, parts = 1 + (int)pick(s, 4);
		vocab[v][0] = 0;
		for (k = 0; k < parts; k++)
			strcat(vocab[v], syllables[pick(s, (uint32_t)nsyl)]);
	}
	while (o < len) {
		uint64_t r = splitmix(s);
		/* index ~ 600 * u^3 gives a heavy head */
		double u = (double)(r >> 11) / 9007199254740992.0;
		size_t idx = (size_t)(600.0 * u * u * u), wl;
		const char *w = vocab[idx < 600 ? idx : 599];
		wl = strlen(w);
		if (o + wl + 2 > len) break;
		memcpy(out + o, w, wl);
		o += wl;
		switch (r & 31) {
		case 0: out[o++] = '.'; out[o++] = '\n'; break;
		case 1: case 2: out[o++] = ','; out[o++] = ' '; break;
		case 3: { int n = (int)((r >> 8) % 100000); o += (size_t)snprintf((char *)out + o, len - o, " %d ", n); break; }
		default: out[o++] = ' ';
		}
	}
	while (o < len) out[o++] = ' ';
	return o;
}

/* The record part: 32-byte records (a counter, a timestamp that advances by small steps, a
 * random walk, a small enum, zero padding), in RUNS of 64 slots a run of one repeated byte or
 * of a repeated 2-, 4- or 8-byte pattern, and in one slot of 64 a block of random bytes. */
static void make_records(uint8_t *out, size_t len, uint64_t *s, unsigned runs)
{
	size_t o = 0;
	uint32_t counter = (uint32_t)splitmix(s);
	uint64_t stamp = splitmix(s) >> 20;
	int32_t walk = 0;
	while (o < len) {
		uint32_t r = pick(s, 64);
		if (r < runs) {          /* a run of a short pattern */
			size_t n = 16 + pick(s, 400), p = (size_t)1 << pick(s, 4), i;
			uint8_t pat[8];
			uint64_t x = splitmix(s);
			memcpy(pat, &x, 8);
			for (i = 0; i < n && o < len; i++) out[o++] = pat[i % p];
		} else if (r == runs) {  /* incompressible bytes */
			size_t n = 8 + pick(s, 120), i;
			for (i = 0; i < n && o < len; i++) out[o++] = (uint8_t)splitmix(s);
		} else {
			uint8_t rec[32];
			memset(rec, 0, sizeof(rec));
			counter++;
			stamp += 1 + pick(s, 9);
			walk += (int32_t)pick(s, 17) - 8;
			memcpy(rec, &counter, 4);
			memcpy(rec + 4, &stamp, 8);
			memcpy(rec + 12, &walk, 4);
			rec[16] = (uint8_t)pick(s, 5);
			rec[17] = (uint8_t)(walk & 0x0F);
			{ size_t i; for (i = 0; i < 32 && o < len; i++) out[o++] = rec[i]; }
		}
	}
}

static uint8_t *make_corpus(uint64_t seed, size_t len, unsigned mix, unsigned runs)
{
	uint8_t *c = malloc(len + 1);
	uint64_t s = seed ^ 0x5DEECE66Dull;
	size_t text = len / 8 * mix;
	if (!c) { perror("malloc"); exit(1); }
	splitmix(&s);
	make_text(c, text, &s);
	make_records(c + text, len - text, &s, runs);
	return c;
}

/* Pass-dependent words at 64 places spread over the buffer, so no two passes see one input. */
static void stamp(uint8_t *buf, size_t len, uint64_t seed, uint64_t pass)
{
	uint64_t s = seed ^ (pass * 0xD1B54A32D192ED03ull) ^ 0xA5A5A5A5ull;
	size_t k;
	if (len < 64 * 8) return;
	for (k = 0; k < 64; k++) {
		uint64_t w = splitmix(&s);
		size_t at = (len / 64) * k + (size_t)(w % (len / 64 - 8));
		memcpy(buf + at, &w, 8);
	}
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s || *s == '-') return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

static int run(uint64_t seed, size_t kib, unsigned passes, int decompress, int accel, unsigned mix, unsigned runs, int quiet)
{
	size_t len = kib * 1024;
	uint8_t *corpus = make_corpus(seed, len, mix, runs);
	uint8_t *work = malloc(len);
	int bound = LZ4_compressBound((int)len);
	char *comp = malloc((size_t)bound);
	uint8_t *back = malloc(len);
	struct digest d = { seed ^ 0x6A09E667F3BCC908ull, 0xBB67AE8584CAA73Bull, 0 };
	uint64_t csum = 0;
	unsigned p;
	int clen = 0;
	if (!work || !comp || !back) { perror("malloc"); return 1; }
	for (p = 0; p < passes; p++) {
		if (!decompress || p % 64 == 0) {
			memcpy(work, corpus, len);
			stamp(work, len, seed, p);
			clen = LZ4_compress_fast((const char *)work, comp, (int)len, bound, accel);
			if (clen <= 0) { fprintf(stderr, "compression failed\n"); return 2; }
			csum += (uint64_t)clen;
		}
		if (!decompress) {
			fold(&d, (const uint8_t *)comp, (size_t)clen);
			if (p == 0 || p + 1 == passes) {
				int n = LZ4_decompress_safe(comp, (char *)back, clen, (int)len);
				if (n != (int)len || memcmp(back, work, len)) { fprintf(stderr, "round trip differs at pass %u\n", p); return 2; }
			}
		} else {
			int n = LZ4_decompress_safe(comp, (char *)back, clen, (int)len);
			if (n != (int)len) { fprintf(stderr, "decompression failed at pass %u\n", p); return 2; }
			fold(&d, back, len);
			if ((p % 64 == 0 || p + 1 == passes) && memcmp(back, work, len)) { fprintf(stderr, "round trip differs at pass %u\n", p); return 2; }
		}
	}
	if (!quiet)
		printf("seed %llu mode %s kib %zu passes %u compressed_total %llu digest %016llx%016llx bytes %llu\n",
		       (unsigned long long)seed, decompress ? "decompress" : "compress", kib, passes,
		       (unsigned long long)csum, (unsigned long long)d.a, (unsigned long long)d.b,
		       (unsigned long long)d.n);
	free(corpus); free(work); free(comp); free(back);
	return 0;
}

static int selftest(void)
{
	/* Round trips of small and odd sizes and of every corpus mix, in both modes. */
	static const size_t sizes[] = { 1, 2, 3, 7, 8, 13, 64, 100, 4096, 65535, 65536, 65537, 300001 };
	size_t i;
	unsigned mix;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (mix = 0; mix <= 8; mix += 4) {
			size_t len = sizes[i];
			uint8_t *c = make_corpus(1000 + i, len, mix, 1 + mix), *back = malloc(len);
			int bound = LZ4_compressBound((int)len), accel;
			char *comp = malloc((size_t)bound);
			for (accel = 1; accel <= 8; accel *= 8) {
				int clen = LZ4_compress_fast((const char *)c, comp, (int)len, bound, accel);
				int n = LZ4_decompress_safe(comp, (char *)back, clen, (int)len);
				if (clen <= 0 || n != (int)len || memcmp(back, c, len)) {
					fprintf(stderr, "selftest: round trip of %zu bytes (mix %u, accel %d) fails\n", len, mix, accel);
					return 1;
				}
			}
			free(c); free(back); free(comp);
		}
	}
	if (run(7, 64, 3, 0, 1, 5, 1, 1) || run(7, 64, 70, 1, 1, 5, 1, 1) || run(8, 64, 70, 1, 1, 2, 16, 1)) return 1;
	puts("selftest ok");
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, v;
	size_t kib = 1024;
	unsigned passes = 100, mix = 5, runs = 1;
	int decompress = 0, accel = 1, have_seed = 0, i;
	if (argc >= 2 && !strcmp(argv[1], "selftest")) return selftest();
	if (argc < 2 || strcmp(argv[1], "run")) goto usage;
	for (i = 2; i < argc; i += 2) {
		const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!val) goto usage;
		if (!strcmp(k, "--mode")) {
			if (!strcmp(val, "compress")) decompress = 0;
			else if (!strcmp(val, "decompress")) decompress = 1;
			else goto usage;
			continue;
		}
		if (parse_u64(val, &v)) goto usage;
		if (!strcmp(k, "--seed")) { seed = v; have_seed = 1; }
		else if (!strcmp(k, "--kib") && v >= 1 && v <= 1024 * 1024) kib = (size_t)v;
		else if (!strcmp(k, "--passes") && v >= 1 && v <= 1000000) passes = (unsigned)v;
		else if (!strcmp(k, "--accel") && v >= 1 && v <= 64) accel = (int)v;
		else if (!strcmp(k, "--mix") && v <= 8) mix = (unsigned)v;
		else if (!strcmp(k, "--runs") && v <= 32) runs = (unsigned)v;
		else goto usage;
	}
	if (!have_seed) goto usage;
	return run(seed, kib, passes, decompress, accel, mix, runs, 0);
usage:
	fprintf(stderr, "usage: evo-bench run --seed N [--kib K] [--passes P] [--mode compress|decompress] [--accel A] [--mix M] [--runs R]\n       evo-bench selftest\n");
	return 2;
}
