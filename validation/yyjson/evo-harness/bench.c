/*
 * evo's timed harness for yyjson's writer of floating-point numbers (validation/yyjson,
 * docs/validation.md).
 *
 * Not part of yyjson: the workload copies it into every tree as an overlay and links it against
 * the tree's build/libyyjson.a. A run
 *
 *   1. builds a mutable array of --count numbers once; for each of --passes passes, draws
 *      --count doubles from --seed and the pass number (see draw: full-precision values,
 *      decimals with few digits such as prices and readings, whole numbers, tiny and huge
 *      magnitudes, in proportions set by --kind), sets them into the array with
 *      yyjson_mut_set_real and writes the document with yyjson_mut_write_opts;
 *   2. folds every written byte into the digest; the first and the last pass are read back with
 *      yyjson_read and every number must come back bit for bit (exit 2 otherwise);
 *   3. prints the seed, the sizes and two 64-bit digests.
 *
 *   evo-bench run --seed N [--count C] [--passes P] [--kind mixed|short|full]
 *   evo-bench selftest
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yyjson.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

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

enum kind { MIXED, SHORT, FULL };

static const double pow10tab[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8 };

/* One finite double. SHORT: decimals of 1-8 significant digits scaled by a power of ten;
 * FULL: random bit patterns of any finite magnitude; MIXED: mostly SHORT, a quarter FULL, and
 * some whole numbers and extreme magnitudes. */
static double draw(uint64_t *s, enum kind k)
{
	uint64_t r = splitmix(s);
	unsigned sel = (unsigned)(r & 15);
	if (k == SHORT || (k == MIXED && sel < 9)) {
		unsigned digits = 1 + (unsigned)((r >> 4) % 8), scale = (unsigned)((r >> 8) % 9);
		double m = (double)((r >> 20) % (uint64_t)pow10tab[digits]);
		double v = m / pow10tab[scale];
		return (r >> 63) ? -v : v;
	}
	if (k == MIXED && sel < 11)  /* whole numbers */
		return (double)(int64_t)((r >> 12) % 100000000) - 5e7;
	if (k == MIXED && sel < 12) {  /* very small or very large */
		double v = (double)((r >> 16) % 1000003) + 0.5;
		return (r & 16) ? v * 1e-300 : v * 1e290;
	}
	for (;;) {
		uint64_t bits = splitmix(s);
		double v;
		memcpy(&v, &bits, 8);
		if (isfinite(v)) return v;
	}
}

static int same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static int read_back(const char *json, size_t len, const double *want, size_t count)
{
	yyjson_doc *doc = yyjson_read(json, len, 0);
	yyjson_val *arr, *v;
	size_t i = 0, idx, max;
	if (!doc) return -1;
	arr = yyjson_doc_get_root(doc);
	if (!yyjson_is_arr(arr) || yyjson_arr_size(arr) != count) { yyjson_doc_free(doc); return -1; }
	yyjson_arr_foreach(arr, idx, max, v) {
		double got;
		if (yyjson_is_real(v)) got = yyjson_get_real(v);
		else if (yyjson_is_sint(v)) got = (double)yyjson_get_sint(v);
		else if (yyjson_is_uint(v)) got = (double)yyjson_get_uint(v);
		else { yyjson_doc_free(doc); return -1; }
		/* -0.0 may be written as an integer zero by some writers; compare values then */
		if (!same_bits(got, want[i]) && !(got == 0 && want[i] == 0)) { yyjson_doc_free(doc); return (int)i + 1; }
		i++;
	}
	yyjson_doc_free(doc);
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s || *s == '-') return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

static int run(uint64_t seed, size_t count, unsigned passes, enum kind k, int quiet)
{
	double *vals = malloc(count * sizeof(double));
	yyjson_mut_val **slots = malloc(count * sizeof(*slots));
	yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *arr = doc ? yyjson_mut_arr(doc) : NULL;
	struct digest d = { seed ^ 0x6A09E667F3BCC908ull, 0xBB67AE8584CAA73Bull, 0 };
	unsigned p;
	size_t i;
	if (!vals || !slots || !arr) { fprintf(stderr, "out of memory\n"); return 1; }
	/* One array of COUNT numbers, built once; every pass gives each number a new value. */
	yyjson_mut_doc_set_root(doc, arr);
	for (i = 0; i < count; i++) {
		slots[i] = yyjson_mut_real(doc, 0.0);
		if (!slots[i] || !yyjson_mut_arr_append(arr, slots[i])) { fprintf(stderr, "out of memory\n"); return 1; }
	}
	for (p = 0; p < passes; p++) {
		uint64_t s = seed ^ ((uint64_t)(p + 1) * 0xD1B54A32D192ED03ull);
		char *json;
		size_t len = 0;
		yyjson_write_err err;
		for (i = 0; i < count; i++) {
			vals[i] = draw(&s, k);
			yyjson_mut_set_real(slots[i], vals[i]);
		}
		json = yyjson_mut_write_opts(doc, 0, NULL, &len, &err);
		if (!json) { fprintf(stderr, "write failed: %s\n", err.msg); return 2; }
		fold(&d, (const uint8_t *)json, len);
		if (p == 0 || p + 1 == passes) {
			int bad = read_back(json, len, vals, count);
			if (bad) { fprintf(stderr, "pass %u: number %d does not read back\n", p, bad); return 2; }
		}
		free(json);
	}
	if (!quiet)
		printf("seed %llu count %zu passes %u bytes %llu digest %016llx%016llx\n",
		       (unsigned long long)seed, count, passes, (unsigned long long)d.n,
		       (unsigned long long)d.a, (unsigned long long)d.b);
	yyjson_mut_doc_free(doc);
	free(vals);
	free(slots);
	return 0;
}

static int selftest(void)
{
	/* Values with known shortest forms must read back exactly, alone and in arrays. */
	static const double edge[] = { 0.0, 1.0, -1.0, 0.1, 0.3, 1e21, 1e-7, 123456789012345680.0,
		5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 9007199254740993.0, 0.5, 100.0 };
	size_t i;
	for (i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *arr = yyjson_mut_arr(doc);
		size_t len;
		char *json;
		yyjson_mut_doc_set_root(doc, arr);
		yyjson_mut_arr_add_real(doc, arr, edge[i]);
		json = yyjson_mut_write(doc, 0, &len);
		if (!json || read_back(json, len, &edge[i], 1)) {
			fprintf(stderr, "selftest: %.17g does not round-trip (%s)\n", edge[i], json ? json : "no output");
			return 1;
		}
		free(json);
		yyjson_mut_doc_free(doc);
	}
	if (run(11, 5000, 2, MIXED, 1) || run(12, 5000, 2, FULL, 1) || run(13, 5000, 2, SHORT, 1)) return 1;
	puts("selftest ok");
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, v;
	size_t count = 100000;
	unsigned passes = 10;
	enum kind k = MIXED;
	int have_seed = 0, i;
	if (argc >= 2 && !strcmp(argv[1], "selftest")) return selftest();
	if (argc < 2 || strcmp(argv[1], "run")) goto usage;
	for (i = 2; i < argc; i += 2) {
		const char *key = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!val) goto usage;
		if (!strcmp(key, "--kind")) {
			if (!strcmp(val, "mixed")) k = MIXED;
			else if (!strcmp(val, "short")) k = SHORT;
			else if (!strcmp(val, "full")) k = FULL;
			else goto usage;
			continue;
		}
		if (parse_u64(val, &v)) goto usage;
		if (!strcmp(key, "--seed")) { seed = v; have_seed = 1; }
		else if (!strcmp(key, "--count") && v >= 1 && v <= 100000000) count = (size_t)v;
		else if (!strcmp(key, "--passes") && v >= 1 && v <= 1000000) passes = (unsigned)v;
		else goto usage;
	}
	if (!have_seed) goto usage;
	return run(seed, count, passes, k, 0);
usage:
	fprintf(stderr, "usage: evo-bench run --seed N [--count C] [--passes P] [--kind mixed|short|full]\n       evo-bench selftest\n");
	return 2;
}
