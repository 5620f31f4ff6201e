/* The differ's numeric hot loops as single passes over flat arrays (see baseline/run/native.py).
 *
 * Plain C99 with no Python API: built into a shared library by `python -m baseline.run.native`
 * (scripts/setup.sh, the wheel's build hook) and called through ctypes. Every function here
 * has a numpy twin in baseline/run/align.py or normalize.py that gives the same numbers; the
 * twins are what a machine without a C compiler runs, and tests/test_native.py compares both.
 */
#define _GNU_SOURCE /* memmem (glibc, musl and the BSDs have it) */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A signed integer array of 2, 4 or 8 bytes an element (numpy's narrow ids and codes). */
static inline int64_t at(const void *a, int width, int64_t i) {
    switch (width) {
    case 2: return ((const int16_t *)a)[i];
    case 4: return ((const int32_t *)a)[i];
    default: return ((const int64_t *)a)[i];
    }
}

static inline uint64_t mix(uint64_t h) { /* splitmix64's finaliser: align._mix */
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

/* The hash of the k tokens ending at i (window_hashes' rule below); *first and *prev carry the
 * current stream's first position and id from one i to the next. */
static inline uint64_t window_hash_at(const uint64_t *tok, const void *sid, int sid_width, int64_t i,
                                      const uint64_t *role_hash, int64_t k, uint64_t pad, int64_t *first,
                                      int64_t *prev) {
    int64_t s = at(sid, sid_width, i);
    if (s != *prev) {
        *first = i;
        *prev = s;
    }
    int64_t pos = i - *first;
    uint64_t h = role_hash[s];
    for (int64_t j = 0; j < k; j++) {
        h ^= j <= pos ? tok[i - j] : pad;
        h = mix(h);
    }
    return h;
}

/* align.window_hashes: out[i] = the hash of the k tokens ending at i, PAD before the start of
 * i's stream (sid non-decreasing), seeded with role_hash[sid[i]]; token j places back is mixed
 * in j-th (j = 0 first), as the numpy version does. */
void window_hashes(const uint64_t *tok, const void *sid, int sid_width, int64_t n, const uint64_t *role_hash,
                   int64_t k, uint64_t pad, uint64_t *out) {
    int64_t first = 0;
    int64_t prev = n ? at(sid, sid_width, 0) : 0;
    for (int64_t i = 0; i < n; i++) {
        out[i] = window_hash_at(tok, sid, sid_width, i, role_hash, k, pad, &first, &prev);
    }
}

/* The open-addressing hash set of align.seen_in: `size` slots (a power of two, zero-filled by
 * the caller), 0 marking an empty slot (a value 0 is remembered apart, in *has_zero), probed
 * linearly from a multiplicative hash of the value. */
static inline uint64_t slot_of(uint64_t v, int shift) { return shift < 64 ? (v * 0x9E3779B97F4A7C15ULL) >> shift : 0; }

static inline int shift_of(int64_t size) {
    int shift = 64;
    for (int64_t s = size; s > 1; s >>= 1) shift--;
    return shift;
}

static inline void set_add(uint64_t *table, uint64_t mask, int shift, uint64_t v, int *has_zero) {
    if (v == 0) {
        *has_zero = 1;
        return;
    }
    uint64_t h = slot_of(v, shift);
    while (table[h] != 0 && table[h] != v) h = (h + 1) & mask;
    table[h] = v;
}

/* Slots are looked up a batch ahead of use: the table (8 MiB for a million windows) is far
 * larger than the caches, so each lookup is a memory access; asking for a batch's slots
 * first lets those accesses overlap instead of waiting for each in turn. The values are
 * still added and probed one by one in order, so the table and the answers are the same. */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif
#define BATCH 16

static void set_probe(const uint64_t *table, int64_t size, int has_zero, const uint64_t *values, int64_t n,
                      uint8_t *out) {
    const uint64_t mask = (uint64_t)size - 1;
    const int shift = shift_of(size);
    for (int64_t i = 0; i < n; i++) {
        if (i + BATCH < n) PREFETCH(&table[slot_of(values[i + BATCH], shift)]);
        uint64_t v = values[i];
        if (v == 0) {
            out[i] = (uint8_t)has_zero;
            continue;
        }
        uint64_t h = slot_of(v, shift);
        while (table[h] != 0 && table[h] != v) h = (h + 1) & mask;
        out[i] = table[h] == v;
    }
}

/* align.seen_in: out[i] = values[i] occurs in model (exact on all 64 bits). */
void seen_in(const uint64_t *values, int64_t n, const uint64_t *model, int64_t m, uint64_t *table, int64_t size,
             uint8_t *out) {
    const uint64_t mask = (uint64_t)size - 1;
    const int shift = shift_of(size);
    int has_zero = 0;
    for (int64_t i = 0; i < m; i++) {
        if (i + BATCH < m) PREFETCH(&table[slot_of(model[i + BATCH], shift)]);
        set_add(table, mask, shift, model[i], &has_zero);
    }
    set_probe(table, size, has_zero, values, n, out);
}

/* align.window_set: the window hashes of the model streams (tok, sid: as window_hashes takes
 * them) hashed into the set (`size` zeroed slots) as they are made: the model's hashes never
 * exist as an array beside the set (a batch of them at a time, see BATCH). Returns has_zero
 * for set_lookup. */
int window_set(const uint64_t *tok, const void *sid, int sid_width, int64_t m, const uint64_t *role_hash, int64_t k,
               uint64_t pad, uint64_t *table, int64_t size) {
    const uint64_t mask = (uint64_t)size - 1;
    const int shift = shift_of(size);
    int has_zero = 0;
    int64_t first = 0;
    int64_t prev = m ? at(sid, sid_width, 0) : 0;
    uint64_t batch[BATCH];
    for (int64_t lo = 0; lo < m; lo += BATCH) {
        int64_t len = m - lo < BATCH ? m - lo : BATCH;
        for (int64_t j = 0; j < len; j++) {
            batch[j] = window_hash_at(tok, sid, sid_width, lo + j, role_hash, k, pad, &first, &prev);
            PREFETCH(&table[slot_of(batch[j], shift)]);
        }
        for (int64_t j = 0; j < len; j++) set_add(table, mask, shift, batch[j], &has_zero);
    }
    return has_zero;
}

/* out[i] = values[i] is in the set window_set made. */
void set_lookup(const uint64_t *table, int64_t size, int has_zero, const uint64_t *values, int64_t n, uint8_t *out) {
    set_probe(table, size, has_zero, values, n, out);
}

/* normalize._stable_order: the stable argsort of dense codes 0.. by a counting sort; `next`
 * holds each code's first slot (the streams' starts) and is advanced in place. */
void stable_order(const void *codes, int code_width, int64_t n, int64_t *next, void *out, int out_width) {
    for (int64_t i = 0; i < n; i++) {
        int64_t slot = next[at(codes, code_width, i)]++;
        if (out_width == 4)
            ((int32_t *)out)[slot] = (int32_t)i;
        else
            ((int64_t *)out)[slot] = i;
    }
}

/* normalize._first_appearance_codes: dense codes 0.. of the (tkey, tid) pairs by first
 * appearance, through a direct-address table of (tkey - t_lo) * tid_span + (tid - tid_lo)
 * slots that the caller fills with -1. */
int64_t first_appearance(const void *tkey, int tkey_width, const void *tid, int tid_width, int64_t n, int64_t t_lo,
                         int64_t tid_lo, int64_t tid_span, int32_t *table, int32_t *out, int64_t *counts) {
    int32_t next = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t key = (at(tkey, tkey_width, i) - t_lo) * tid_span + (at(tid, tid_width, i) - tid_lo);
        int32_t c = table[key];
        if (c < 0) {
            c = table[key] = next++;
            if (counts) counts[c] = 0;
        }
        out[i] = c;
        if (counts) counts[c]++;
    }
    return next;
}

static inline void put(void *a, int width, int64_t i, int64_t v) {
    switch (width) {
    case 2: ((int16_t *)a)[i] = (int16_t)v; break;
    case 4: ((int32_t *)a)[i] = (int32_t)v; break;
    default: ((int64_t *)a)[i] = v;
    }
}

/* One pass of align.compress_loops with period p, in place: a position equal (token and
 * stream) to the one p places before it is a repetition, dropped when its run of such
 * positions is at least p long (any run when p == 1). `drop` is a scratch byte per position.
 * Returns the number of positions kept (moved to the front of tok, sid and orig). */
int64_t compress_pass(uint64_t *tok, void *sid, int sid_width, void *orig, int orig_width, int64_t n, int64_t p,
                      uint8_t *drop) {
    int64_t any = 0;
    for (int64_t i = 0; i < n; i++) {
        drop[i] = i >= p && tok[i] == tok[i - p] && at(sid, sid_width, i) == at(sid, sid_width, i - p);
        any |= drop[i];
    }
    if (!any) return n;
    if (p > 1) { /* runs shorter than one loop body are kept */
        for (int64_t i = 0; i < n;) {
            if (!drop[i]) {
                i++;
                continue;
            }
            int64_t j = i;
            while (j < n && drop[j]) j++;
            if (j - i < p) memset(drop + i, 0, (size_t)(j - i));
            i = j;
        }
    }
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        if (drop[i]) continue;
        if (w != i) {
            tok[w] = tok[i];
            put(sid, sid_width, w, at(sid, sid_width, i));
            put(orig, orig_width, w, at(orig, orig_width, i));
        }
        w++;
    }
    return w;
}

/* normalize's number rules on a string array's buffers, as RE2's global replace of
 *   flags 0: [0-9]+
 *   flags 1: 0[xX][0-9a-fA-F]+|[0-9]+                      (ARG_RULES)
 *   flags 3: 0[xX][0-9a-fA-F]+|[0-9a-fA-F]{16,}|[0-9]+     (DIGIT_RULES)
 * would rewrite each of the n strings (bytes data[offsets[i] .. offsets[i+1]), offsets relative
 * to data) with the rep_len bytes of rep: leftmost first, at each start the first alternative
 * that matches, each as long as it goes (greedy), the scan going on after a match. Only ASCII
 * bytes ever match, and no byte of a multi-byte UTF-8 sequence is ASCII: exact on the bytes.
 * One pass: `out` holds at least max(rep_len, 1) bytes per input byte (a digit alone becomes
 * rep); the n + 1 output offsets go to new_offsets; the output's byte count is returned. */
static inline int is_digit(uint8_t c) { return (uint8_t)(c - '0') <= 9; }
static inline int is_hex(uint8_t c) { return is_digit(c) || (uint8_t)((c | 0x20) - 'a') <= 5; }

int64_t number_runs(const uint8_t *data, const int32_t *offsets, int64_t n, const uint8_t *rep, int64_t rep_len,
                    int flags, uint8_t *out, int32_t *new_offsets) {
    int64_t w = 0;
    new_offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = data + offsets[i], *end = data + offsets[i + 1];
        const uint8_t *short_hex = p; /* below it, a hex run shorter than 16 goes on: no long one starts */
        uint8_t *o = out + w;
        while (p < end) {
            uint8_t c = *p;
            if (!is_hex(c)) { /* the common case: no alternative starts here */
                *o++ = c;
                p++;
                continue;
            }
            const uint8_t *q = NULL;
            if ((flags & 1) && c == '0' && end - p > 2 && (p[1] | 0x20) == 'x' && is_hex(p[2])) {
                for (q = p + 3; q < end && is_hex(*q); q++) {}
            } else if ((flags & 2) && p >= short_hex) {
                const uint8_t *r = p + 1;
                while (r < end && is_hex(*r)) r++;
                if (r - p >= 16)
                    q = r;
                else
                    short_hex = r;
            }
            if (!q && is_digit(c))
                for (q = p + 1; q < end && is_digit(*q); q++) {}
            if (!q) {
                *o++ = c;
                p++;
                continue;
            }
            memcpy(o, rep, (size_t)rep_len);
            o += rep_len;
            p = q;
        }
        w = o - out;
        new_offsets[i + 1] = (int32_t)w;
    }
    return w;
}

/* mask_random_tokens' prefilter, as RE2's partial match of
 *   ^(?:/tmp|/var/tmp|/dev/shm)/.*[A-Za-z0-9_]{6}|[0-9][A-Za-z0-9_]*[A-Z]|[A-Z][A-Za-z0-9_]*[0-9]
 * on each string: hit[i] = 1 when it starts with a temp root and a run of 6 word characters
 * follows on the first line, or some run of word characters holds both a digit and an
 * upper-case letter. */
static inline int is_word(uint8_t c) {
    return is_digit(c) || (uint8_t)((c | 0x20) - 'a') <= 25 || c == '_';
}

static int starts_with(const uint8_t *p, const uint8_t *end, const char *prefix, int64_t len) {
    return end - p >= len && memcmp(p, prefix, (size_t)len) == 0;
}

void random_prefilter(const uint8_t *data, const int32_t *offsets, int64_t n, uint8_t *hit) {
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = data + offsets[i], *end = data + offsets[i + 1];
        int found = 0;
        const uint8_t *rest = end - p < 5 || p[0] != '/' ? NULL
                            : starts_with(p, end, "/tmp/", 5) ? p + 5
                            : starts_with(p, end, "/var/tmp/", 9) ? p + 9
                            : starts_with(p, end, "/dev/shm/", 9) ? p + 9 : NULL;
        if (rest) {
            int64_t run = 0;
            for (const uint8_t *r = rest; r < end && *r != '\n' && !found; r++) {
                run = is_word(*r) ? run + 1 : 0;
                found = run >= 6;
            }
        }
        /* most strings hold no upper-case letter at all: a cheap test first */
        unsigned any_upper = 0;
        for (const uint8_t *r = p; r < end; r++) any_upper |= (uint8_t)(*r - 'A') <= 25;
        if (any_upper && !found) {
            int digit = 0, upper = 0;
            for (const uint8_t *r = p; r < end && !found; r++) {
                uint8_t c = *r;
                if (!is_word(c)) {
                    digit = upper = 0;
                    continue;
                }
                digit |= is_digit(c);
                upper |= (uint8_t)(c - 'A') <= 25;
                found = digit && upper;
            }
        }
        hit[i] = (uint8_t)found;
    }
}

/* normalize.apply_rules' literal prefilter, as Arrow's match_substring: hit[i] = 1 when the
 * lit_len bytes of lit occur in string i. One memmem scan over all the strings' bytes (the
 * occurrences are few), each occurrence mapped to its string; one crossing into the next
 * string is none. */
void contains_literal(const uint8_t *data, const int32_t *offsets, int64_t n, const uint8_t *lit, int64_t lit_len,
                      uint8_t *hit) {
    memset(hit, 0, (size_t)n);
    if (n == 0 || lit_len == 0) {
        if (lit_len == 0) memset(hit, 1, (size_t)n);
        return;
    }
    const uint8_t *end = data + offsets[n];
    const uint8_t *p = data + offsets[0];
    int64_t i = 0;
    while (p < end) {
        const uint8_t *at = memmem(p, (size_t)(end - p), lit, (size_t)lit_len);
        if (!at) break;
        int64_t pos = at - data;
        while (offsets[i + 1] <= pos) i++;
        if (pos + lit_len <= offsets[i + 1]) {
            hit[i] = 1;
            p = data + offsets[i + 1]; /* the next string's bytes */
        } else {
            p = at + 1;
        }
    }
}

/* normalize._pack's exact branch in one pass: out[i] = the mixed-radix number of the nf fields
 * (Horner's rule in uint64, field f's value + offset[f] as a digit of radix[f]). Field f is a
 * signed integer array of width[f] bytes, or one value for every row when step[f] == 0 (a
 * broadcast array). Every step is exact modulo 2**64, as numpy's uint64 loop. */
void pack_fields(int nf, const void *const *vals, const int *width, const int *step, const uint64_t *radix,
                 const uint64_t *offset, int64_t n, uint64_t *out) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = 0;
        for (int f = 0; f < nf; f++)
            h = h * radix[f] + (uint64_t)at(vals[f], width[f], step[f] ? i : 0) + offset[f];
        out[i] = h;
    }
}

/* normalize._coded_column's row pass fused with prepare's gather into stream order: out[i] =
 * the code of source row r = order[i], read where it lies: chunk c with bounds[c] <= r <
 * bounds[c + 1] (chunks of one or more rows, bounds ascending), its Arrow dictionary index
 * j = r - bounds[c] (idx[c], signed, idx_width[c] bytes) mapped through tables[c] (int32,
 * table_len[c] >= 1 entries), or -1 when bit valid_off[c] + j of valid[c] is clear (NULL: no
 * nulls). An index outside its table wraps, as numpy's take(mode="wrap") in the numpy twin
 * does (valid Arrow data has none). One write per row, in the order's sequence: no codes
 * array in source order and no narrowing copy (out is int16 or int32, out_width bytes). */
static inline int64_t gather_codes_as(int nchunks, const void *const *idx, const int *idx_width,
                                   const uint8_t *const *valid, const int64_t *valid_off, const int64_t *bounds,
                                   const int32_t *const *tables, const int64_t *table_len, const void *order,
                                   int order_width, int64_t n, void *out, int out_width, int iw) {
    int c = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = at(order, order_width, i);
        if (r < 0 || r >= bounds[nchunks]) return i; /* not a row of these chunks */
        if (r < bounds[c] || r >= bounds[c + 1]) { /* rows of a stream mostly share a chunk */
            int lo = 0, hi = nchunks;
            while (hi - lo > 1) {
                int mid = (lo + hi) / 2;
                if (bounds[mid] <= r) lo = mid;
                else hi = mid;
            }
            c = lo;
        }
        int64_t j = r - bounds[c], v;
        if (valid[c] && !((valid[c][(valid_off[c] + j) >> 3] >> ((valid_off[c] + j) & 7)) & 1)) {
            v = -1;
        } else {
            int64_t x = at(idx[c], iw ? iw : idx_width[c], j), len = table_len[c];
            if ((uint64_t)x >= (uint64_t)len) x = ((x % len) + len) % len;
            v = tables[c][x];
        }
        put(out, out_width, i, v);
    }
    return -1;
}

/* Returns the position of the first row of `order` out of the chunks' rows (the caller then
 * gathers with numpy, which says so), else -1. */
int64_t gather_codes(int nchunks, const void *const *idx, const int *idx_width, const uint8_t *const *valid,
                  const int64_t *valid_off, const int64_t *bounds, const int32_t *const *tables,
                  const int64_t *table_len, const void *order, int order_width, int64_t n, void *out,
                  int out_width) {
    int iw = idx_width[0];
    for (int c = 1; c < nchunks; c++)
        if (idx_width[c] != iw) iw = 0; /* mixed widths: read each chunk's */
    /* the usual widths as constants (the switches of at/put leave the loop): int32 indices
     * and order, int16 or int32 codes */
    if (iw == 4 && order_width == 4 && out_width == 2)
        return gather_codes_as(nchunks, idx, idx_width, valid, valid_off, bounds, tables, table_len, order, 4, n, out,
                               2, 4);
    if (iw == 4 && order_width == 4 && out_width == 4)
        return gather_codes_as(nchunks, idx, idx_width, valid, valid_off, bounds, tables, table_len, order, 4, n, out,
                               4, 4);
    return gather_codes_as(nchunks, idx, idx_width, valid, valid_off, bounds, tables, table_len, order, order_width, n,
                           out, out_width, iw);
}

/* numpy's ``src[idx]`` for a 1-D contiguous `src` of 1, 2, 4 or 8-byte elements (copied as
 * bytes: any dtype of that size) and signed indices of 2, 4 or 8 bytes, a negative index
 * counting from the end. numpy casts indices that are not intp to intp, a buffer at a time,
 * and gathers through its general iterator: ~3x this loop's time on two million int16 codes.
 * Stops at the first index out of range and returns its position (the caller then lets numpy
 * raise its IndexError), else -1. Each width pair is its own loop (no switch per element). */
#define TAKE_LOOP(TS, TI)                                                                  \
    do {                                                                                   \
        const TS *s = (const TS *)src;                                                     \
        const TI *x = (const TI *)idx;                                                     \
        TS *o = (TS *)out;                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                  \
            int64_t j = x[i];                                                              \
            j += j < 0 ? n_src : 0;                                                        \
            if ((uint64_t)j >= (uint64_t)n_src) return i;                                  \
            o[i] = s[j];                                                                   \
        }                                                                                  \
        return -1;                                                                         \
    } while (0)
#define TAKE_IDX(TS)                                                                       \
    switch (idx_width) {                                                                   \
    case 2: TAKE_LOOP(TS, int16_t);                                                        \
    case 4: TAKE_LOOP(TS, int32_t);                                                        \
    default: TAKE_LOOP(TS, int64_t);                                                       \
    }

int64_t take(const void *src, int src_width, int64_t n_src, const void *idx, int idx_width, int64_t n, void *out) {
    switch (src_width) {
    case 1: TAKE_IDX(uint8_t);
    case 2: TAKE_IDX(uint16_t);
    case 4: TAKE_IDX(uint32_t);
    default: TAKE_IDX(uint64_t);
    }
}

/* ``table[codes[rows]]`` in one pass (normalize.Recoded: the normalised path code of a row
 * through its raw code), the same rules as `take` for both gathers: int32 `table`, codes of 2
 * or 4 bytes, rows of 2, 4 or 8. Returns the position of the first row or code out of range,
 * else -1. */
#define TAKE2_LOOP(TC, TR)                                                                 \
    do {                                                                                   \
        const TC *c = (const TC *)codes;                                                   \
        const TR *r = (const TR *)rows;                                                    \
        for (int64_t i = 0; i < n; i++) {                                                  \
            int64_t j = r[i];                                                              \
            j += j < 0 ? n_codes : 0;                                                      \
            if ((uint64_t)j >= (uint64_t)n_codes) return i;                                \
            int64_t k = c[j];                                                              \
            k += k < 0 ? n_table : 0;                                                      \
            if ((uint64_t)k >= (uint64_t)n_table) return i;                                \
            out[i] = table[k];                                                             \
        }                                                                                  \
        return -1;                                                                         \
    } while (0)
#define TAKE2_ROWS(TC)                                                                     \
    switch (rows_width) {                                                                  \
    case 2: TAKE2_LOOP(TC, int16_t);                                                       \
    case 4: TAKE2_LOOP(TC, int32_t);                                                       \
    default: TAKE2_LOOP(TC, int64_t);                                                      \
    }

int64_t take2(const int32_t *table, int64_t n_table, const void *codes, int codes_width, int64_t n_codes,
              const void *rows, int rows_width, int64_t n, int32_t *out) {
    if (codes_width == 2) {
        TAKE2_ROWS(int16_t);
    }
    TAKE2_ROWS(int32_t);
}

/* A string's 64-bit hash: 8 bytes at a time, multiplied and folded, then `mix`. Only a
 * table's hint: equal hashes are compared byte for byte. */
static inline uint64_t bytes_hash(const uint8_t *p, int64_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 29;
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, p + i, (size_t)(len - i));
        h = (h ^ w) * 0x94D049BB133111EBULL;
    }
    return mix(h);
}

/* A slot of factorize_strings' table: a distinct string's hash, number and first row (-1: empty). */
typedef struct {
    uint64_t hash;
    int32_t code;
    int32_t row;
} string_slot;

#define FACTOR_AHEAD 16 /* strings hashed, and their slots asked for, ahead of their lookup */

/* Arrow's dictionary_encode of a string array without nulls (`offsets`: its n + 1 int32
 * offsets into `data`): codes[i] = the number of the distinct string of row i, numbered in
 * order of first appearance; first[c] = the row where string c first appears. `table`: `size`
 * slots (a power of two above n; emptied here), probed linearly from the hash; a slot holds the
 * hash, so bytes are compared only on a full 64-bit match. The table is far larger than the
 * caches: each string's slot is asked for FACTOR_AHEAD strings before it is looked at (the
 * misses overlap instead of waiting one by one). Returns the number of distinct strings. */
int64_t factorize_strings(const uint8_t *data, const int32_t *offsets, int64_t n, string_slot *table, int64_t size,
                          int32_t *codes, int32_t *first) {
    uint64_t mask = (uint64_t)size - 1;
    uint64_t ahead[FACTOR_AHEAD];
    int64_t distinct = 0;
    memset(table, 0xff, (size_t)size * sizeof(string_slot));
    for (int64_t i = 0; i < n && i < FACTOR_AHEAD; i++) {
        ahead[i] = bytes_hash(data + offsets[i], (int64_t)offsets[i + 1] - offsets[i]);
        PREFETCH(&table[ahead[i] & mask]);
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = ahead[i % FACTOR_AHEAD];
        int64_t next = i + FACTOR_AHEAD;
        if (next < n) {
            uint64_t hn = bytes_hash(data + offsets[next], (int64_t)offsets[next + 1] - offsets[next]);
            ahead[next % FACTOR_AHEAD] = hn;
            PREFETCH(&table[hn & mask]);
        }
        const uint8_t *p = data + offsets[i];
        int64_t len = (int64_t)offsets[i + 1] - offsets[i];
        uint64_t s = h & mask;
        int32_t c;
        for (;;) {
            string_slot *e = &table[s];
            c = e->code;
            if (c < 0) {
                c = (int32_t)distinct++;
                e->hash = h;
                e->code = c;
                e->row = (int32_t)i;
                first[c] = (int32_t)i;
                break;
            }
            if (e->hash == h) {
                int64_t j = e->row;
                int64_t other = (int64_t)offsets[j + 1] - offsets[j];
                if (other == len && (len == 0 || memcmp(data + offsets[j], p, (size_t)len) == 0)) break;
            }
            s = (s + 1) & mask;
        }
        codes[i] = c;
    }
    return distinct;
}

/* ------------------------------------------------------------------------------------------
 * A dictionary-encoded string column chunk of a Parquet file, read without Arrow
 * (baseline/run/native.py: read_dictionary_chunk). Arrow's reader inserts every dictionary
 * page into a hash table (its memo table, so that pages can be unified) and builds the
 * indices through a dictionary builder: ~30 % of a path column's read. The differ wants the
 * page's values and the rows' indices as they are. Anything this reader does not know (page
 * kinds, encodings, codecs, a chunk that falls back to plain pages) makes it return a
 * negative number, and the caller reads the column through Arrow as before.
 * ------------------------------------------------------------------------------------------ */
#include <stdlib.h>

/* libzstd's ZSTD_decompressDCtx, with a context the caller keeps (ZSTD_decompress makes and
 * frees one, ~100 KiB of fresh pages, on every call: once a page here) */
typedef size_t (*zstd_decompress_fn)(void *dctx, void *dst, size_t cap, const void *src, size_t size);

typedef struct {
    const uint8_t *p, *end;
    int err;
} thrift;

static uint64_t t_varint(thrift *t) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (t->p >= t->end)
            break;
        uint8_t b = *t->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return v;
    }
    t->err = 1;
    return 0;
}

static int64_t t_zigzag(thrift *t) {
    uint64_t v = t_varint(t);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void t_skip(thrift *t, int type, int depth);

static void t_skip_struct(thrift *t, int depth) {
    if (depth > 32) { /* nesting no page header has */
        t->err = 1;
        return;
    }
    while (!t->err) {
        if (t->p >= t->end) {
            t->err = 1;
            return;
        }
        uint8_t h = *t->p++;
        if (h == 0)
            return; /* stop */
        if ((h >> 4) == 0)
            t_zigzag(t); /* a long-form field id */
        t_skip(t, h & 0x0F, depth + 1);
    }
}

/* One value of compact type `type` (in a struct: booleans are in the field header). */
static void t_skip(thrift *t, int type, int depth) {
    int64_t n;
    if (depth > 32) { /* nesting no page header has (lists of lists too) */
        t->err = 1;
        return;
    }
    switch (type) {
    case 1: case 2: return;
    case 3: n = 1; break;
    case 4: case 5: case 6: t_varint(t); return;
    case 7: n = 8; break;
    case 8: n = (int64_t)t_varint(t); break;
    case 9: case 10: {
        if (t->p >= t->end) {
            t->err = 1;
            return;
        }
        uint8_t h = *t->p++;
        int64_t size = h >> 4, elem = h & 0x0F;
        if (size == 15)
            size = (int64_t)t_varint(t);
        for (int64_t i = 0; i < size && !t->err; i++) {
            if (elem == 1 || elem == 2) { /* booleans in a list: a byte each */
                if (t->p >= t->end) t->err = 1; else t->p++;
            } else
                t_skip(t, (int)elem, depth + 1);
        }
        return;
    }
    case 11: {
        int64_t size = (int64_t)t_varint(t);
        if (size == 0)
            return;
        if (t->p >= t->end) {
            t->err = 1;
            return;
        }
        uint8_t kv = *t->p++;
        for (int64_t i = 0; i < size && !t->err; i++) {
            t_skip(t, kv >> 4, depth + 1);
            t_skip(t, kv & 0x0F, depth + 1);
        }
        return;
    }
    case 12: t_skip_struct(t, depth); return;
    default: t->err = 1; return;
    }
    if (n < 0 || n > t->end - t->p)
        t->err = 1;
    else
        t->p += n;
}

/* The fields of a PageHeader the reader uses (parquet.thrift); -1: absent. */
typedef struct {
    int64_t type, uncompressed, compressed;
    int64_t num_values, encoding, def_encoding;           /* DataPageHeader / DictionaryPageHeader */
    int64_t v2_nulls, v2_rows, v2_def_len, v2_rep_len, v2_compressed; /* DataPageHeaderV2 */
} page_header;

/* Reads the fields of the nested header struct `kind` (5 data, 7 dictionary, 8 data v2). */
static void t_sub_header(thrift *t, int kind, page_header *ph) {
    /* the struct's required i32 fields (parquet.thrift), as bits of their ids: a header without
     * one is refused, as Arrow's Thrift code refuses it */
    unsigned need = kind == 5 ? 0xFu : kind == 7 ? 0x3u : 0x3Fu, seen = 0;
    int16_t last = 0;
    while (!t->err) {
        if (t->p >= t->end) {
            t->err = 1;
            return;
        }
        uint8_t h = *t->p++;
        if (h == 0) {
            if ((seen & need) != need)
                t->err = 1;
            return;
        }
        int type = h & 0x0F;
        int16_t id = (h >> 4) ? (int16_t)(last + (h >> 4)) : (int16_t)t_zigzag(t);
        last = id;
        if (type == 1 || type == 2) { /* a boolean: v2's is_compressed, the dictionary's is_sorted */
            if (kind == 8 && id == 7)
                ph->v2_compressed = type == 1;
            continue;
        }
        if (type != 5) {
            t_skip(t, type, 1);
            continue;
        }
        int64_t v = t_zigzag(t);
        if (v < INT32_MIN || v > INT32_MAX) { /* an i32 that is not one */
            t->err = 1;
            return;
        }
        if (id >= 1 && id <= 6)
            seen |= 1u << (id - 1);
        if (kind == 8) {
            switch (id) {
            case 1: ph->num_values = v; break;
            case 2: ph->v2_nulls = v; break;
            case 3: ph->v2_rows = v; break;
            case 4: ph->encoding = v; break;
            case 5: ph->v2_def_len = v; break;
            case 6: ph->v2_rep_len = v; break;
            }
        } else {
            if (id == 1) ph->num_values = v;
            else if (id == 2) ph->encoding = v;
            else if (id == 3 && kind == 5) ph->def_encoding = v;
        }
    }
}

/* Parses the page header at p; returns its length, or -1. */
static int64_t page_header_at(const uint8_t *p, const uint8_t *end, page_header *ph) {
    thrift t = {p, end, 0};
    page_header z = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1};
    *ph = z;
    int16_t last = 0;
    for (;;) {
        if (t.err || t.p >= t.end)
            return -1;
        uint8_t h = *t.p++;
        if (h == 0)
            break;
        int type = h & 0x0F;
        int16_t id = (h >> 4) ? (int16_t)(last + (h >> 4)) : (int16_t)t_zigzag(&t);
        last = id;
        if (type == 5 && id >= 1 && id <= 3) {
            int64_t v = t_zigzag(&t);
            if (v < INT32_MIN || v > INT32_MAX)
                return -1;
            if (id == 1) ph->type = v;
            else if (id == 2) ph->uncompressed = v;
            else ph->compressed = v;
        } else if (type == 12 && (id == 5 || id == 7 || id == 8)) {
            t_sub_header(&t, id, ph);
        } else {
            t_skip(&t, type, 0);
        }
    }
    if (t.err || ph->type < 0 || ph->uncompressed < 0 || ph->compressed < 0 || ph->compressed > end - t.p)
        return -1;
    return t.p - p;
}

/* The RLE / bit-packed hybrid (Parquet's levels and dictionary indices): n values of `width`
 * bits from [p, end) into out (NULL: only checked and counted). Returns 0, or -1 when the data
 * ends early or a value is >= `limit` (limit 0: no check). */
static int hybrid(const uint8_t *p, const uint8_t *end, int width, int64_t n, uint32_t *out, uint32_t limit) {
    int64_t done = 0;
    int bytes = (width + 7) / 8;
    uint64_t mask = width >= 32 ? 0xFFFFFFFFULL : ((1ULL << width) - 1);
    while (done < n) {
        thrift t = {p, end, 0};
        uint64_t header = t_varint(&t);
        if (t.err)
            return -1;
        p = t.p;
        if (header & 1) { /* bit-packed groups of 8 */
            uint64_t groups = header >> 1;
            if (groups == 0 || groups > (uint64_t)(end - p) || (int64_t)groups * width > end - p)
                return -1;
            int64_t count = (int64_t)groups * 8, take = count < n - done ? count : n - done;
            int64_t nbytes = (int64_t)groups * width;
            uint32_t bad = 0;
            for (int64_t i = 0; i < take; i++) {
                uint64_t bit = (uint64_t)i * (uint64_t)width, w = 0;
                int64_t at = (int64_t)(bit >> 3);
                if (at + 8 <= nbytes) {
                    memcpy(&w, p + at, 8); /* one unaligned load: the value's <= 39 bits */
                } else {
                    for (int64_t b = 0; at + b < nbytes && b < 8; b++)
                        w |= (uint64_t)p[at + b] << (8 * b);
                }
                uint32_t v = (uint32_t)((w >> (bit & 7)) & mask);
                bad |= limit && v >= limit;
                out[done + i] = v;
            }
            if (bad)
                return -1;
            p += (int64_t)groups * width;
            done += take;
        } else { /* a run of one value */
            int64_t count = (int64_t)(header >> 1);
            if (bytes > end - p)
                return -1;
            uint32_t v = 0;
            for (int b = 0; b < bytes; b++)
                v |= (uint32_t)p[b] << (8 * b);
            p += bytes;
            if (count > n - done)
                count = n - done;
            if (count > 0 && limit && v >= limit)
                return -1;
            for (int64_t i = 0; i < count; i++)
                out[done + i] = v;
            done += count;
            if (header >> 1 == 0 && bytes == 0)
                return -1; /* no progress */
        }
    }
    return 0;
}

/* Whether n definition levels of bit width 1 at [p, end) are one run: 1 (every row defined),
 * 0 (none), -1 (anything else, decoded row by row). */
static int level_run(const uint8_t *p, const uint8_t *end, int64_t n) {
    thrift t = {p, end, 0};
    uint64_t header = t_varint(&t);
    if (t.err || (header & 1) || (int64_t)(header >> 1) < n || t.p >= end || *t.p > 1)
        return -1;
    return *t.p;
}

/* The page's data as stored uncompressed: src itself, or decompressed into *scratch (grown). */
static const uint8_t *page_data(const uint8_t *src, int64_t size, int64_t uncompressed, int codec,
                                zstd_decompress_fn zstd, void *dctx, uint8_t **scratch, int64_t *cap) {
    if (size < 0 || uncompressed < 0) /* (a v2 page's sizes less its levels' can be) */
        return NULL;
    if (codec == 0)
        return size == uncompressed ? src : NULL;
    if (codec != 6 || zstd == NULL || dctx == NULL) /* 6: ZSTD */
        return NULL;
    if (uncompressed > *cap || *scratch == NULL) { /* (an empty page too: a pointer, not NULL) */
        free(*scratch);
        *scratch = malloc(uncompressed ? (size_t)uncompressed : 1);
        *cap = *scratch ? uncompressed : 0;
        if (!*scratch)
            return NULL;
    }
    size_t got = zstd(dctx, *scratch, (size_t)uncompressed, src, (size_t)size);
    return got == (size_t)uncompressed ? *scratch : NULL;
}

/* The dictionary page's header at the chunk's start: info = (values, uncompressed bytes).
 * Returns 0, or -1 when the chunk does not start with a PLAIN dictionary page. */
int64_t parquet_dictionary_info(const uint8_t *chunk, int64_t len, int64_t *info) {
    page_header ph;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return -1; /* Parquet's integers are little-endian, read here as the machine's: Arrow's */
#endif
    if (page_header_at(chunk, chunk + len, &ph) < 0 || ph.type != 2 || ph.num_values < 0
        || (ph.encoding != 0 && ph.encoding != 2)) /* PLAIN, PLAIN_DICTIONARY */
        return -1;
    info[0] = ph.num_values;
    info[1] = ph.uncompressed;
    return 0;
}

/* A column chunk of `rows` rows (a flat column: max definition level 0 or 1) whose first page
 * is its dictionary and whose data pages are all dictionary indices, into Arrow's buffers:
 * the dictionary's int32 offsets (n_dict + 1) and bytes (data, at most data_cap; offsets NULL:
 * the dictionary's values are 32-bit integers, copied into data), the rows' int32 indices (0 under nulls) and validity bitmap (bits set: valid). Returns the rows'
 * null count, or a negative number when the chunk is not one this reader knows. */
int64_t parquet_dictionary_chunk(const uint8_t *chunk, int64_t len, int codec, void *zstd_fn, void *dctx, int max_def,
                                 int64_t rows, int64_t n_dict, int32_t *offsets, uint8_t *data,
                                 int64_t data_cap, int32_t *indices, uint8_t *valid) {
    zstd_decompress_fn zstd = (zstd_decompress_fn)zstd_fn;
    const uint8_t *p = chunk, *end = chunk + len;
    uint8_t *scratch = NULL;
    int64_t cap = 0, nulls = 0, row = 0, result = -1;
    uint32_t *levels = NULL, *spare = NULL;
    int64_t levels_cap = 0, vals_cap = 0;
    page_header ph;
    if (max_def < 0 || max_def > 1 || n_dict < 0 || n_dict >= INT32_MAX)
        return -1;
    int64_t h = page_header_at(p, end, &ph);
    if (h < 0 || ph.type != 2 || ph.num_values != n_dict)
        goto out;
    p += h;
    {
        const uint8_t *d = page_data(p, ph.compressed, ph.uncompressed, codec, zstd, dctx, &scratch, &cap);
        if (!d)
            goto out;
        const uint8_t *de = d + ph.uncompressed;
        int64_t at_byte = 0;
        if (offsets == NULL) { /* 32-bit integers (parquet_int_dictionary_chunk): 4 bytes each */
            if (ph.uncompressed != 4 * n_dict || data_cap < 4 * n_dict)
                goto out;
            memcpy(data, d, (size_t)(4 * n_dict));
            p += ph.compressed;
            goto pages;
        }
        offsets[0] = 0;
        for (int64_t i = 0; i < n_dict; i++) {
            if (de - d < 4)
                goto out;
            uint32_t n = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
            d += 4;
            if ((int64_t)n > de - d || (int64_t)n > data_cap - at_byte || at_byte + n >= INT32_MAX)
                goto out;
            memcpy(data + at_byte, d, n);
            d += n;
            at_byte += n;
            offsets[i + 1] = (int32_t)at_byte;
        }
        p += ph.compressed;
    }
pages:
    memset(valid, 0, (size_t)((rows + 7) / 8));
    while (p < end && row < rows) {
        h = page_header_at(p, end, &ph);
        if (h < 0)
            goto out;
        p += h;
        const uint8_t *body = p;
        p += ph.compressed;
        if (ph.type == 1) /* an index page: nothing of the rows */
            continue;
        if ((ph.type != 0 && ph.type != 3) || (ph.encoding != 8 && ph.encoding != 2) || ph.num_values < 0
            || ph.num_values > rows - row) /* RLE_DICTIONARY, PLAIN_DICTIONARY */
            goto out;
        int64_t n = ph.num_values;
        const uint8_t *d, *de, *lv = NULL, *lve = NULL;
        if (ph.type == 0) {
            d = page_data(body, ph.compressed, ph.uncompressed, codec, zstd, dctx, &scratch, &cap);
            if (!d)
                goto out;
            de = d + ph.uncompressed;
            if (max_def == 1) { /* RLE levels behind their 4-byte length */
                if (ph.def_encoding != 3 || de - d < 4)
                    goto out;
                uint32_t ln = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
                if ((int64_t)ln > de - d - 4)
                    goto out;
                lv = d + 4;
                lve = lv + ln;
                d = lve;
            }
        } else {
            if (ph.v2_rep_len != 0 || ph.v2_def_len < 0 || ph.v2_def_len > ph.compressed
                || ph.v2_rows != n || (max_def == 0 && ph.v2_def_len != 0))
                goto out;
            lv = max_def ? body : NULL;
            lve = body + ph.v2_def_len;
            int64_t rest = ph.compressed - ph.v2_def_len, rest_plain = ph.uncompressed - ph.v2_def_len;
            d = ph.v2_compressed ? page_data(lve, rest, rest_plain, codec, zstd, dctx, &scratch, &cap)
                                 : (rest == rest_plain ? lve : NULL);
            if (!d)
                goto out;
            de = d + rest_plain;
        }
        /* levels that are one run (every row defined, or none: most pages of most columns)
         * are not spelled out row by row (4 bytes a row of fresh memory) */
        int run = lv ? level_run(lv, lve, n) : 1;
        int mixed = run < 0;
        int64_t present = run == 0 ? 0 : n;
        if (mixed) {
            if (n > levels_cap) {
                free(levels);
                levels = malloc((size_t)n * sizeof(uint32_t));
                levels_cap = levels ? n : 0;
                if (!levels)
                    goto out;
            }
            if (hybrid(lv, lve, 1, n, levels, 2) < 0)
                goto out;
            present = 0;
            for (int64_t i = 0; i < n; i++)
                present += levels[i];
        }
        if (ph.type == 3 && ph.v2_nulls >= 0 && ph.v2_nulls != n - present)
            goto out;
        /* the indices: their bit width in a byte, then the hybrid runs of the present values,
         * decoded behind the rows' slots when some rows are null, then spread over the rows */
        uint32_t *idx = (uint32_t *)(indices + row);
        uint32_t *vals = idx;
        if (mixed && present < n) {
            if (present + 1 > vals_cap) {
                free(spare);
                spare = malloc((size_t)(present + 1) * sizeof(uint32_t));
                vals_cap = spare ? present + 1 : 0;
                if (!spare)
                    goto out;
            }
            vals = spare;
        }
        if (present > 0) {
            if (de - d < 1 || d[0] > 32)
                goto out;
            if (hybrid(d + 1, de, d[0], present, vals, (uint32_t)n_dict) < 0)
                goto out;
        } else {
            memset(idx, 0, (size_t)n * sizeof(uint32_t)); /* every row null: index 0 */
        }
        if (vals != idx) { /* without branches: a null row takes 0 and does not advance k */
            vals[present] = 0;
            int64_t k = 0;
            for (int64_t i = 0; i < n; i++) {
                uint32_t l = levels[i];
                idx[i] = vals[k] & (0u - l);
                k += l;
            }
        }
        if (present == 0) {
            /* no row valid: the bitmap's bits stay clear */
        } else if (mixed && present < n) {
            for (int64_t i = 0; i < n; i++)
                valid[(row + i) >> 3] |= (uint8_t)(levels[i] << ((row + i) & 7));
        } else { /* every row valid: whole bytes at once */
            int64_t i = row, stop = row + n;
            for (; i < stop && (i & 7); i++)
                valid[i >> 3] |= (uint8_t)(1u << (i & 7));
            if (stop - i >= 8) {
                memset(valid + (i >> 3), 0xFF, (size_t)((stop - i) >> 3));
                i += (stop - i) & ~(int64_t)7;
            }
            for (; i < stop; i++)
                valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
        nulls += n - present;
        row += n;
    }
    if (row == rows)
        result = nulls;
out:
    free(scratch);
    free(levels);
    free(spare);
    return result;
}

/* A dictionary-encoded INT32 column chunk (the differ's pid, tid, ppid, depth) as Arrow reads
 * it without read_dictionary: the rows' values (`width` 4: int32, 2: int16, the type Arrow
 * reads the column as; 0 under nulls) into out, the validity bitmap into valid; dict (n_dict
 * int32) and indices (rows int32) are the caller's scratch. Returns the null count, or a
 * negative number (a chunk parquet_dictionary_chunk does not know, a value beyond int16). */
int64_t parquet_int_dictionary_chunk(const uint8_t *chunk, int64_t len, int codec, void *zstd_fn, void *dctx,
                                     int max_def, int64_t rows, int64_t n_dict, int32_t *dict, int32_t *indices,
                                     uint8_t *valid, void *out, int width) {
    if (width != 2 && width != 4)
        return -1;
    int64_t nulls = parquet_dictionary_chunk(chunk, len, codec, zstd_fn, dctx, max_def, rows, n_dict, NULL,
                                             (uint8_t *)dict, 4 * n_dict, indices, valid);
    if (nulls < 0)
        return nulls;
    if (n_dict == 0 && nulls != rows)
        return -1;
    if (width == 2) {
        for (int64_t i = 0; i < n_dict; i++)
            if (dict[i] < INT16_MIN || dict[i] > INT16_MAX)
                return -1;
    }
    /* a null row's index is 0 (see the spread above): its slot holds dict[0] until cleared */
    if (width == 4) {
        int32_t *o = (int32_t *)out;
        for (int64_t i = 0; i < rows; i++)
            o[i] = n_dict ? dict[indices[i]] : 0;
    } else {
        int16_t *o = (int16_t *)out;
        for (int64_t i = 0; i < rows; i++)
            o[i] = (int16_t)(n_dict ? dict[indices[i]] : 0);
    }
    if (nulls && n_dict && dict[0] != 0) {
        for (int64_t i = 0; i < rows; i++) {
            if (!(valid[i >> 3] >> (i & 7) & 1)) {
                if (width == 4)
                    ((int32_t *)out)[i] = 0;
                else
                    ((int16_t *)out)[i] = 0;
            }
        }
    }
    return nulls;
}
