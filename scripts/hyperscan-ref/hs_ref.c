/* Reference for the content-rule throughput: Hyperscan (libhs, block mode) over the same bytes with the same
 * literal patterns, to show what a state-of-the-art multi-literal matcher costs on this data and machine.
 *
 *   hs_ref PATTERNS.hex FILE [REPS]
 *
 * Patterns: one hex literal per line, case-sensitive (as RuleSet::from_content_hex loads content-10k.hex).
 * FILE is scanned as one buffer (the raw capture file: headers and payloads), and in 1,500-byte blocks (one scan per
 * block, as per packet). Modes: every match reported (HS_FLAG_SOM_LEFTMOST off, callback counts), and
 * HS_FLAG_SINGLEMATCH (each pattern at most once per scan: the cheapest possible reporting). Prints the minimum
 * time of each over REPS. Built and run by scripts/bench-hyperscan. */
#include <hs/hs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int on_match(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags,
                    void *ctx) {
    (void)id; (void)from; (void)to; (void)flags;
    ++*(unsigned long long *)ctx;
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) { perror(path); exit(2); }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: hs_ref PATTERNS.hex FILE [REPS]\n"); return 2; }
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    size_t hlen, dlen;
    char *hex = (char *)read_file(argv[1], &hlen);
    unsigned char *data = read_file(argv[2], &dlen);
    /* Parse the literals. */
    size_t cap = 16384, n = 0;
    char **pats = malloc(cap * sizeof *pats);
    size_t *lens = malloc(cap * sizeof *lens);
    for (char *line = strtok(hex, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        size_t l = strlen(line);
        if (l == 0 || l % 2) continue;
        if (n == cap) { cap *= 2; pats = realloc(pats, cap * sizeof *pats); lens = realloc(lens, cap * sizeof *lens); }
        char *p = malloc(l / 2);
        for (size_t i = 0; i < l / 2; i++) p[i] = (char)(hexval(line[2 * i]) * 16 + hexval(line[2 * i + 1]));
        pats[n] = p; lens[n] = l / 2; n++;
    }
    unsigned *ids = malloc(n * sizeof *ids);
    unsigned *flags_all = malloc(n * sizeof *flags_all);
    unsigned *flags_one = malloc(n * sizeof *flags_one);
    for (size_t i = 0; i < n; i++) { ids[i] = i; flags_all[i] = 0; flags_one[i] = HS_FLAG_SINGLEMATCH; }
    const char *names[2] = {"all matches", "single match per pattern and scan"};
    unsigned *flags[2] = {flags_all, flags_one};
    printf("hs_ref: Hyperscan %s, %zu literals, %zu bytes\n", hs_version(), n, dlen);
    for (int mode = 0; mode < 2; mode++) {
        hs_database_t *db; hs_compile_error_t *err;
        double t0 = now();
        if (hs_compile_lit_multi((const char *const *)pats, flags[mode], ids, lens, n, HS_MODE_BLOCK, NULL, &db,
                                 &err) != HS_SUCCESS) {
            fprintf(stderr, "compile: %s\n", err->message); return 1;
        }
        double tc = now() - t0;
        hs_scratch_t *scratch = NULL;
        hs_alloc_scratch(db, &scratch);
        for (int chunked = 0; chunked < 2; chunked++) {
            double best = 1e9; unsigned long long matches = 0;
            for (int r = 0; r < reps; r++) {
                unsigned long long m = 0;
                double t = now();
                if (!chunked) {
                    hs_scan(db, (const char *)data, dlen, 0, scratch, on_match, &m);
                } else {
                    for (size_t off = 0; off < dlen; off += 1500) {
                        size_t len = dlen - off < 1500 ? dlen - off : 1500;
                        hs_scan(db, (const char *)data + off, len, 0, scratch, on_match, &m);
                    }
                }
                t = now() - t;
                if (t < best) best = t;
                matches = m;
            }
            printf("hs_ref: %-34s %-18s %8.1f ms  %7.0f MB/s  %llu matches  (compile %.2f s)\n", names[mode],
                   chunked ? "1500-byte blocks" : "one buffer", best * 1e3, dlen / best / 1e6, matches, tc);
        }
        hs_free_scratch(scratch);
        hs_free_database(db);
    }
    return 0;
}
