/*
 * evo's timed harness for cJSON's tree building and printing (validation/cjson,
 * docs/validation.md).
 *
 * Not part of cJSON: the workload copies it into every tree as an overlay and links it against
 * the tree's build/libcjson.a. A run does --passes passes; each pass
 *
 *   1. builds, through cJSON's API (cJSON_AddItemToArray, cJSON_AddItemToObject and the
 *      cJSON_Create* functions), a document of --records records drawn from --seed and the pass
 *      number, grouped into arrays of --width records under one root array; a record is an
 *      object of an id, a name, a score, a flag, a list of tags, a point and a reading;
 *   2. prints it with cJSON_PrintUnformatted and folds every printed byte into the digest;
 *   3. deletes it. The first and the last pass also parse the text back and print it again,
 *      which must give the same text (exit 2 otherwise).
 *
 *   evo-bench run --seed N [--records R] [--width W] [--passes P]
 *   evo-bench selftest
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cJSON.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t pick(uint64_t *s, uint32_t n) { return (uint32_t)(splitmix(s) % n); }

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

static const char *const parts[] = {
	"al", "ber", "cor", "dun", "el", "fa", "gri", "hol", "is", "jen", "ko", "lum", "mer", "nor",
	"os", "pel", "quin", "ros", "sta", "tor", "ul", "ven", "wyn", "xa", "yor", "zel",
};

static void make_word(char *out, uint64_t *s, int min_parts, int max_parts)
{
	int n = min_parts + (int)pick(s, (uint32_t)(max_parts - min_parts + 1)), k;
	out[0] = 0;
	for (k = 0; k < n; k++)
		strcat(out, parts[pick(s, (uint32_t)(sizeof(parts) / sizeof(parts[0])))]);
}

static cJSON *make_record(uint64_t *s, unsigned id)
{
	cJSON *rec = cJSON_CreateObject(), *tags = cJSON_CreateArray(), *point = cJSON_CreateObject();
	char word[64];
	int ntags = (int)pick(s, 6), k;
	make_word(word, s, 2, 4);
	cJSON_AddItemToObject(rec, "id", cJSON_CreateNumber((double)id));
	cJSON_AddItemToObject(rec, "name", cJSON_CreateString(word));
	cJSON_AddItemToObject(rec, "score", cJSON_CreateNumber((double)pick(s, 100000) / 100.0));
	cJSON_AddItemToObject(rec, "active", cJSON_CreateBool(pick(s, 3) != 0));
	for (k = 0; k < ntags; k++) {
		make_word(word, s, 1, 2);
		cJSON_AddItemToArray(tags, cJSON_CreateString(word));
	}
	cJSON_AddItemToObject(rec, "tags", tags);
	cJSON_AddItemToObject(point, "x", cJSON_CreateNumber((double)((int)pick(s, 20001) - 10000)));
	cJSON_AddItemToObject(point, "y", cJSON_CreateNumber((double)((int)pick(s, 20001) - 10000)));
	cJSON_AddItemToObject(rec, "point", point);
	if (pick(s, 4) == 0)
		cJSON_AddItemToObject(rec, "reading", cJSON_CreateNull());
	else
		cJSON_AddItemToObject(rec, "reading", cJSON_CreateNumber((double)(int)pick(s, 1000000)));
	return rec;
}

static cJSON *make_doc(uint64_t seed, unsigned pass, unsigned records, unsigned width)
{
	uint64_t s = seed ^ ((uint64_t)(pass + 1) * 0xD1B54A32D192ED03ull);
	cJSON *root = cJSON_CreateArray(), *group = NULL;
	unsigned i;
	for (i = 0; i < records; i++) {
		if (i % width == 0) {
			group = cJSON_CreateArray();
			cJSON_AddItemToArray(root, group);
		}
		cJSON_AddItemToArray(group, make_record(&s, i));
	}
	return root;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s || *s == '-') return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

static int reprint_same(const char *text)
{
	cJSON *back = cJSON_Parse(text);
	char *again;
	int same;
	if (!back) return 0;
	again = cJSON_PrintUnformatted(back);
	same = again && strcmp(again, text) == 0;
	free(again);
	cJSON_Delete(back);
	return same;
}

static int run(uint64_t seed, unsigned records, unsigned width, unsigned passes, int quiet)
{
	struct digest d = { seed ^ 0x6A09E667F3BCC908ull, 0xBB67AE8584CAA73Bull, 0 };
	unsigned p;
	for (p = 0; p < passes; p++) {
		cJSON *doc = make_doc(seed, p, records, width);
		char *text = cJSON_PrintUnformatted(doc);
		if (!text) { fprintf(stderr, "printing failed at pass %u\n", p); return 2; }
		fold(&d, (const uint8_t *)text, strlen(text));
		if ((p == 0 || p + 1 == passes) && !reprint_same(text)) {
			fprintf(stderr, "pass %u: the printed text does not parse back to itself\n", p);
			return 2;
		}
		free(text);
		cJSON_Delete(doc);
	}
	if (!quiet)
		printf("seed %llu records %u width %u passes %u bytes %llu digest %016llx%016llx\n",
		       (unsigned long long)seed, records, width, passes, (unsigned long long)d.n,
		       (unsigned long long)d.a, (unsigned long long)d.b);
	return 0;
}

static int selftest(void)
{
	/* Appending keeps order: arrays and objects of many lengths, filled one item at a time,
	 * must hold their items in the order they were added, counted and indexed rightly. Only
	 * what the timed path does (append, print, parse, delete the whole tree) is checked here;
	 * cJSON's own tests cover detaching and replacing. */
	unsigned len, k;
	for (len = 0; len <= 70; len += (len < 10 ? 1 : 13)) {
		cJSON *arr = cJSON_CreateArray(), *obj = cJSON_CreateObject(), *it;
		char key[16];
		for (k = 0; k < len; k++) {
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(k));
			snprintf(key, sizeof(key), "k%u", k);
			cJSON_AddItemToObject(obj, key, cJSON_CreateNumber(k * 2));
		}
		if (cJSON_GetArraySize(arr) != (int)len || cJSON_GetArraySize(obj) != (int)len) {
			fprintf(stderr, "selftest: %u appended, %d counted\n", len, cJSON_GetArraySize(arr));
			return 1;
		}
		k = 0;
		cJSON_ArrayForEach(it, arr) {
			if ((unsigned)it->valuedouble != k || cJSON_GetArrayItem(arr, (int)k) != it) {
				fprintf(stderr, "selftest: item %u of %u is out of order\n", k, len);
				return 1;
			}
			k++;
		}
		for (k = 0; k < len; k++) {
			snprintf(key, sizeof(key), "k%u", k);
			it = cJSON_GetObjectItemCaseSensitive(obj, key);
			if (!it || (unsigned)it->valuedouble != k * 2) { fprintf(stderr, "selftest: member %s is wrong\n", key); return 1; }
		}
		cJSON_Delete(arr);
		cJSON_Delete(obj);
	}
	if (run(5, 300, 7, 2, 1) || run(6, 1000, 1000, 2, 1)) return 1;
	puts("selftest ok");
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, v;
	unsigned records = 20000, width = 400, passes = 10;
	int have_seed = 0, i;
	if (argc >= 2 && !strcmp(argv[1], "selftest")) return selftest();
	if (argc < 2 || strcmp(argv[1], "run")) goto usage;
	for (i = 2; i < argc; i += 2) {
		const char *key = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!val || parse_u64(val, &v)) goto usage;
		if (!strcmp(key, "--seed")) { seed = v; have_seed = 1; }
		else if (!strcmp(key, "--records") && v >= 1 && v <= 10000000) records = (unsigned)v;
		else if (!strcmp(key, "--width") && v >= 1 && v <= 10000000) width = (unsigned)v;
		else if (!strcmp(key, "--passes") && v >= 1 && v <= 1000000) passes = (unsigned)v;
		else goto usage;
	}
	if (!have_seed) goto usage;
	return run(seed, records, width, passes, 0);
usage:
	fprintf(stderr, "usage: evo-bench run --seed N [--records R] [--width W] [--passes P]\n       evo-bench selftest\n");
	return 2;
}
