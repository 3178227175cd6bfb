/*
 * evo's timed harness for libdeflate's decompressor (docs/validation.md).
 *
 * It is not part of libdeflate: the workload copies it into every tree as an overlay file, so a
 * patch under review can neither see it in its diff nor change it. It links the tree's
 * libdeflate.a and
 *
 *   1. generates a corpus from --seed: text-like prose (a seeded vocabulary drawn with a Zipf
 *      law, with stock phrases, wrapped into lines and paragraphs) and binary-like records (counters, timestamps,
 *      random walks, small enumerations, a few incompressible bytes and blocks);
 *   2. compresses each part once with libdeflate at --level (raw DEFLATE);
 *   3. decompresses each part --passes times; before each pass a stored block of 16 fresh bytes
 *      (derived from the seed and the pass number) is put in front of the stream, so no two
 *      passes decompress the same input or produce the same output;
 *   4. prints a digest of every byte every pass decompressed, per part and overall.
 *
 * Almost all of a run's time is step 3 (see the workload's $comment). What it prints depends on
 * the seed and on what decompression produces, never on the compressed bytes, so a change to
 * the compressor alone does not change it. Pass 0's and the last pass's output are also compared
 * with the corpus, and any difference is an error (exit 2).
 *
 *   bench run --seed N [--kib K] [--passes P] [--level L]
 *   bench selftest
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdeflate.h"

/* A stored block: 1 header byte (BFINAL=0, BTYPE=00), LEN, NLEN, then LEN bytes. */
#define PREFIX_DATA 16
#define PREFIX_BYTES (5 + PREFIX_DATA)

/* ---- seeded numbers ---------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t state;
};

static struct rng rng_for(uint64_t seed, uint64_t stream)
{
	struct rng r;
	r.state = mix64(seed ^ mix64(stream + 0x632BE59BD9B4E019ull));
	return r;
}

static uint64_t next(struct rng *r)
{
	r->state += 0x9E3779B97F4A7C15ull;
	return mix64(r->state);
}

/* Uniform in [0, n), n > 0; the bias of a 64-bit modulus is negligible here. */
static uint32_t below(struct rng *r, uint32_t n)
{
	return (uint32_t)(next(r) % n);
}

/* ---- digest ------------------------------------------------------------ */

/* Four independent multiply-rotate lanes over 8-byte words: fast enough that hashing every
 * decompressed byte costs a few percent of decompressing it. Not cryptographic; it only has to
 * tell two outputs apart. */
static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t lane_step(uint64_t h, uint64_t w)
{
	h += w * 0xD6E8FEB86659FD93ull;
	h = rotl(h, 29);
	return h * 0x9E3779B97F4A7C15ull;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	return w;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t l0 = seed ^ 0x243F6A8885A308D3ull, l1 = seed ^ 0x13198A2E03707344ull;
	uint64_t l2 = seed ^ 0xA4093822299F31D0ull, l3 = seed ^ 0x082EFA98EC4E6C89ull;
	size_t i = 0;
	uint8_t tail[32];
	uint64_t h;

	for (; i + 32 <= n; i += 32) {
		l0 = lane_step(l0, load64(p + i));
		l1 = lane_step(l1, load64(p + i + 8));
		l2 = lane_step(l2, load64(p + i + 16));
		l3 = lane_step(l3, load64(p + i + 24));
	}
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p + i, n - i);
	l0 = lane_step(l0, load64(tail));
	l1 = lane_step(l1, load64(tail + 8));
	l2 = lane_step(l2, load64(tail + 16));
	l3 = lane_step(l3, load64(tail + 24));
	h = rotl(l0, 1) + rotl(l1, 7) + rotl(l2, 12) + rotl(l3, 18);
	return mix64(h ^ (uint64_t)n);
}

/* ---- the corpus -------------------------------------------------------- */

struct buf {
	uint8_t *data;
	size_t len, cap;
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

static struct buf buf_new(size_t cap)
{
	struct buf b;

	b.data = xmalloc(cap);
	b.len = 0;
	b.cap = cap;
	return b;
}

/* Appends what fits; generators stop once the buffer is full. */
static void put(struct buf *b, const void *p, size_t n)
{
	if (n > b->cap - b->len)
		n = b->cap - b->len;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_byte(struct buf *b, uint8_t c)
{
	put(b, &c, 1);
}

static int full(const struct buf *b)
{
	return b->len == b->cap;
}

#define VOCAB 6000
#define ZIPF_TABLE (1u << 16)
#define PHRASES 400
#define PHRASE_WORDS 5

/* English letter frequencies, per 10000 (rounded, so they sum to 10002), in alphabet order. */
static const uint16_t letter_freq[26] = {
	817, 149, 278, 425, 1270, 223, 202, 609, 697, 15, 77, 403, 241,
	675, 751, 193, 10, 599, 633, 906, 276, 98, 236, 15, 197, 7,
};

static char random_letter(struct rng *r)
{
	uint32_t x = below(r, 10002);
	int i;

	for (i = 0; i < 25; i++) {
		if (x < letter_freq[i])
			break;
		x -= letter_freq[i];
	}
	return (char)('a' + i);
}

struct vocabulary {
	char words[VOCAB][16];
	uint8_t lens[VOCAB];
	uint16_t zipf[ZIPF_TABLE]; /* a uniform 16-bit number -> a word, rank r with weight 1/(r+3) */
	uint16_t phrases[PHRASES][PHRASE_WORDS]; /* stock phrases of 2 to 4 words, 0-terminated */
};

static void make_vocabulary(struct vocabulary *v, struct rng *r)
{
	double total = 0, acc = 0;
	uint32_t i, w = 0;

	for (i = 0; i < VOCAB; i++) {
		/* Frequent words are short, as in prose. */
		uint32_t len = 1 + below(r, i < 50 ? 4 : 9) + (i > 500 ? below(r, 4) : 0);
		uint32_t k;

		for (k = 0; k < len; k++)
			v->words[i][k] = random_letter(r);
		v->lens[i] = (uint8_t)len;
		total += 1.0 / (i + 3);
	}
	for (i = 0; i < ZIPF_TABLE; i++) {
		double target = (i + 0.5) / ZIPF_TABLE * total;

		while (w + 1 < VOCAB && acc + 1.0 / (w + 3) < target) {
			acc += 1.0 / (w + 3);
			w++;
		}
		v->zipf[i] = (uint16_t)w;
	}
	for (i = 0; i < PHRASES; i++) {
		uint32_t len = 2 + below(r, 3), k;

		memset(v->phrases[i], 0, sizeof(v->phrases[i]));
		for (k = 0; k < len; k++)
			v->phrases[i][k] = (uint16_t)(1 + v->zipf[next(r) & (ZIPF_TABLE - 1)]);
	}
}

/* The next word: a Zipf draw, or the next word of the stock phrase in progress (a quarter of
 * the draws start one, which gives prose's repeated word sequences). */
static uint32_t next_word(const struct vocabulary *v, struct rng *r, const uint16_t **phrase)
{
	if (!*phrase || !**phrase) {
		*phrase = NULL;
		if (below(r, 4) == 0)
			*phrase = v->phrases[v->zipf[next(r) & (ZIPF_TABLE - 1)] % PHRASES];
		else
			return v->zipf[next(r) & (ZIPF_TABLE - 1)];
	}
	return (uint32_t)(*(*phrase)++ - 1);
}

/* Prose: sentences of Zipf-drawn words and stock phrases, some numbers and punctuation, lines of
 * at most 76 columns, paragraphs of 3 to 8 sentences. */
static void make_text(struct buf *out, uint64_t seed)
{
	struct rng r = rng_for(seed, 1);
	struct vocabulary *v = xmalloc(sizeof(*v));
	const uint16_t *phrase = NULL;
	uint32_t column = 0;

	make_vocabulary(v, &r);
	while (!full(out)) {
		uint32_t sentences = 3 + below(&r, 6), s;

		for (s = 0; s < sentences && !full(out); s++) {
			uint32_t words = 4 + below(&r, 19), k;

			for (k = 0; k < words; k++) {
				char word[24];
				uint32_t len;

				if (below(&r, 30) == 0) {
					len = (uint32_t)snprintf(word, sizeof(word), "%u",
								 below(&r, 100000));
				} else {
					uint32_t id = next_word(v, &r, &phrase);

					len = v->lens[id];
					memcpy(word, v->words[id], len);
				}
				if (k == 0 && word[0] >= 'a')
					word[0] = (char)(word[0] - 'a' + 'A');
				if (k + 1 == words) {
					uint32_t end = below(&r, 30);

					word[len++] = end == 0 ? '!' : end < 3 ? '?' : '.';
				} else if (below(&r, 8) == 0) {
					word[len++] = ',';
				}
				if (column > 0 && column + 1 + len > 76) {
					put_byte(out, '\n');
					column = 0;
				} else if (column > 0) {
					put_byte(out, ' ');
					column++;
				}
				put(out, word, len);
				column += len;
			}
		}
		put(out, "\n\n", 2);
		column = 0;
	}
	free(v);
}

static void put_le(struct buf *b, uint64_t x, int bytes)
{
	uint8_t le[8];
	int i;

	for (i = 0; i < bytes; i++)
		le[i] = (uint8_t)(x >> (8 * i));
	put(b, le, (size_t)bytes);
}

/* Binary: 32-byte records of a sensor log, now and then a 4 KiB block of random bytes (data that
 * was compressed already). */
static void make_binary(struct buf *out, uint64_t seed)
{
	static const char names[12][6] = {
		"alpha", "bravo", "delta", "gamma", "kappa", "omega",
		"sigma", "theta", "north", "south", "east0", "west0",
	};
	static const uint8_t kinds[8] = { 1, 1, 1, 1, 2, 2, 3, 7 };
	struct rng r = rng_for(seed, 2);
	uint32_t id = 0, time = below(&r, 1u << 30);
	int64_t value = 0;
	uint16_t base[4];
	int k;

	for (k = 0; k < 4; k++)
		base[k] = (uint16_t)below(&r, 60000);
	while (!full(out)) {
		if (below(&r, 2048) == 0) {
			int i;

			for (i = 0; i < 512; i++)
				put_le(out, next(&r), 8);
			continue;
		}
		time += below(&r, 1000);
		value += (int64_t)below(&r, 201) - 100;
		put_le(out, id++, 4);
		put_le(out, time, 4);
		put_le(out, (uint64_t)value, 4);
		for (k = 0; k < 4; k++)
			put_le(out, (uint64_t)(base[k] + below(&r, 16)), 2);
		put_byte(out, kinds[below(&r, 8)]);
		put_byte(out, below(&r, 8) == 0 ? (uint8_t)next(&r) : 0x01);
		put(out, names[below(&r, 12)], 6);
		put_le(out, next(&r), 4);
	}
}

/* ---- compress once, decompress many times ------------------------------ */

struct part {
	const char *name;
	struct buf raw;
	uint8_t *stream; /* PREFIX_BYTES of stored block, then the compressed data */
	size_t stream_len;
	uint8_t *out;
	uint64_t digest;
};

static int compress_part(struct part *p, int level)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
	size_t bound, n;

	if (!c) {
		fprintf(stderr, "bench: no compressor for level %d\n", level);
		return 1;
	}
	bound = libdeflate_deflate_compress_bound(c, p->raw.len);
	p->stream = xmalloc(PREFIX_BYTES + bound);
	n = libdeflate_deflate_compress(c, p->raw.data, p->raw.len, p->stream + PREFIX_BYTES, bound);
	libdeflate_free_compressor(c);
	if (n == 0) {
		fprintf(stderr, "bench: compressing %s failed\n", p->name);
		return 1;
	}
	p->stream[0] = 0x00;
	p->stream[1] = PREFIX_DATA;
	p->stream[2] = 0x00;
	p->stream[3] = (uint8_t)~PREFIX_DATA;
	p->stream[4] = 0xFF;
	p->stream_len = PREFIX_BYTES + n;
	p->out = xmalloc(PREFIX_DATA + p->raw.len);
	p->digest = 0;
	return 0;
}

/* One pass over one part: a fresh prefix, decompress, fold the output into the digest. */
static int decompress_pass(struct part *p, struct libdeflate_decompressor *d, struct rng *r,
			   uint64_t pass, int verify)
{
	size_t out_len = PREFIX_DATA + p->raw.len, actual = 0;
	enum libdeflate_result res;
	int i;

	for (i = 0; i < PREFIX_DATA; i += 8) {
		uint64_t w = next(r);

		memcpy(p->stream + 5 + i, &w, 8);
	}
	res = libdeflate_deflate_decompress(d, p->stream, p->stream_len, p->out, out_len, &actual);
	if (res != LIBDEFLATE_SUCCESS || actual != out_len) {
		fprintf(stderr, "bench: %s pass %llu: decompression failed (result %d, %zu of %zu bytes)\n",
			p->name, (unsigned long long)pass, (int)res, actual, out_len);
		return 2;
	}
	if (verify && (memcmp(p->out, p->stream + 5, PREFIX_DATA) != 0 ||
		       memcmp(p->out + PREFIX_DATA, p->raw.data, p->raw.len) != 0)) {
		fprintf(stderr, "bench: %s pass %llu: output differs from the corpus\n", p->name,
			(unsigned long long)pass);
		return 2;
	}
	p->digest = mix64(p->digest ^ hash_bytes(p->out, out_len, pass));
	return 0;
}

struct config {
	uint64_t seed;
	uint64_t kib;
	uint64_t passes;
	int level;
};

/* Fills parts[0..1] (text, binary) and runs every pass; 0, or 1 (setup) or 2 (wrong output). */
static int run_passes(const struct config *cfg, struct part parts[2])
{
	size_t total = (size_t)cfg->kib * 1024, text_len = total / 8 * 5;
	struct libdeflate_decompressor *d;
	struct rng r = rng_for(cfg->seed, 3);
	uint64_t pass;
	int i, rc = 0;

	parts[0].name = "text";
	parts[0].raw = buf_new(text_len);
	make_text(&parts[0].raw, cfg->seed);
	parts[1].name = "binary";
	parts[1].raw = buf_new(total - text_len);
	make_binary(&parts[1].raw, cfg->seed);
	for (i = 0; i < 2; i++)
		if (compress_part(&parts[i], cfg->level))
			return 1;
	d = libdeflate_alloc_decompressor();
	if (!d) {
		fprintf(stderr, "bench: no decompressor\n");
		return 1;
	}
	for (pass = 0; pass < cfg->passes && rc == 0; pass++)
		for (i = 0; i < 2 && rc == 0; i++)
			rc = decompress_pass(&parts[i], d, &r, pass,
					     pass == 0 || pass + 1 == cfg->passes);
	libdeflate_free_decompressor(d);
	return rc;
}

static void free_parts(struct part parts[2])
{
	int i;

	for (i = 0; i < 2; i++) {
		free(parts[i].raw.data);
		free(parts[i].stream);
		free(parts[i].out);
	}
}

static int run(const struct config *cfg)
{
	struct part parts[2];
	int i, rc;

	memset(parts, 0, sizeof(parts));
	rc = run_passes(cfg, parts);
	if (rc == 0) {
		uint64_t all = mix64(parts[0].digest ^ rotl(parts[1].digest, 32));

		printf("libdeflate decompression: seed %llu, %llu KiB, %llu passes, level %d\n",
		       (unsigned long long)cfg->seed, (unsigned long long)cfg->kib,
		       (unsigned long long)cfg->passes, cfg->level);
		for (i = 0; i < 2; i++)
			printf("%-6s %10zu bytes per pass  digest %016llx\n", parts[i].name,
			       parts[i].raw.len + PREFIX_DATA, (unsigned long long)parts[i].digest);
		printf("all    digest %016llx\n", (unsigned long long)all);
	}
	free_parts(parts);
	return rc;
}

/* ---- self-test --------------------------------------------------------- */

static int digest_of(uint64_t seed, uint64_t kib, uint64_t passes, int level, uint64_t *digest)
{
	struct config cfg;
	struct part parts[2];
	int rc;

	cfg.seed = seed;
	cfg.kib = kib;
	cfg.passes = passes;
	cfg.level = level;
	memset(parts, 0, sizeof(parts));
	rc = run_passes(&cfg, parts);
	*digest = mix64(parts[0].digest ^ rotl(parts[1].digest, 32));
	free_parts(parts);
	return rc;
}

/* Every pass verified at several levels and sizes (every pass verifies its output when there are
 * at most two), the same seed gives the same digest, another seed another. */
static int selftest(void)
{
	static const int levels[] = { 0, 1, 6, 9, 12 };
	static const uint64_t kibs[] = { 1, 7, 64, 300 };
	uint64_t a, b;
	size_t i, k;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		for (k = 0; k < sizeof(kibs) / sizeof(kibs[0]); k++)
			if (digest_of(11 + k, kibs[k], 2, levels[i], &a)) {
				fprintf(stderr, "selftest: level %d, %llu KiB failed\n", levels[i],
					(unsigned long long)kibs[k]);
				return 1;
			}
	if (digest_of(5, 64, 2, 6, &a) || digest_of(5, 64, 2, 6, &b) || a != b) {
		fprintf(stderr, "selftest: the same seed gave two digests\n");
		return 1;
	}
	if (digest_of(6, 64, 2, 6, &b) || a == b) {
		fprintf(stderr, "selftest: two seeds gave one digest\n");
		return 1;
	}
	if (digest_of(5, 64, 3, 6, &b) || a == b) {
		fprintf(stderr, "selftest: one more pass did not change the digest\n");
		return 1;
	}
	printf("selftest: ok\n");
	return 0;
}

/* ---- arguments --------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr, "usage: bench run --seed N [--kib K] [--passes P] [--level 0-12]\n"
			"       bench selftest\n");
	return 64;
}

static int number(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (!text || text[0] < '0' || text[0] > '9')
		goto bad;
	x = strtoull(text, &end, 10);
	if (*end != '\0' || x < lo || x > hi)
		goto bad;
	*out = x;
	return 0;
bad:
	fprintf(stderr, "bench: %s needs a whole number from %llu to %llu\n", flag,
		(unsigned long long)lo, (unsigned long long)hi);
	return 1;
}

int main(int argc, char **argv)
{
	struct config cfg;
	int have_seed = 0, i;
	uint64_t level = 6;

	if (argc == 2 && strcmp(argv[1], "selftest") == 0)
		return selftest();
	if (argc < 2 || strcmp(argv[1], "run") != 0)
		return usage();
	cfg.kib = 4096;
	cfg.passes = 240;
	for (i = 2; i < argc; i += 2) {
		const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
		int bad;

		if (strcmp(flag, "--seed") == 0) {
			bad = number(flag, value, 0, UINT64_MAX, &cfg.seed);
			have_seed = 1;
		} else if (strcmp(flag, "--kib") == 0) {
			bad = number(flag, value, 1, 1u << 20, &cfg.kib);
		} else if (strcmp(flag, "--passes") == 0) {
			bad = number(flag, value, 1, 1000000, &cfg.passes);
		} else if (strcmp(flag, "--level") == 0) {
			bad = number(flag, value, 0, 12, &level);
		} else {
			return usage();
		}
		if (bad)
			return 64;
	}
	if (!have_seed)
		return usage();
	cfg.level = (int)level;
	return run(&cfg);
}
