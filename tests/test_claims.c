// Included by tests/test_grpo.c (group claims): every study number that README.md and
// notes/results.md print is checked against its record in notes/studies/.
//
// notes/studies/claims.tsv, one claim a line (TAB-separated; # comments):
//   DOC  TEXT  RECORD  STAT  SCALE  FORMAT
// TEXT must stand in DOC as written (each place it stands counts as covered); the value STAT
// computes from RECORD, times SCALE, printed with FORMAT (printf, one or two %f: mean, then the 95%
// half-width), must stand in TEXT.
// STAT, on a compare record (its per-seed lines "  METHOD seed_N: v0 .. vK | test T (SFT S)"):
//   test M | gain M (test − SFT) | dtest A B (paired, A − B) | val J M | dval J A B | sft M
//   (mean ± 95% t half-width over seeds; sft: the starting model's test accuracy, no interval)
// on the tree map's record (tree_sweep.csv): tree LR K W (λ − GRPO, six-cell mean, paired over
// seeds; W at250 or at1000) | treeobj LR K W OBJ (that objective's six-cell mean)
//   summary: a record that holds summaries only: TEXT itself must stand in RECORD.
// And each "±" in README.md's paragraph "What the studies found" and in notes/results.md above its line
// "## Older runs" must lie inside a claim's TEXT: a number planted there without a record fails.

#define CLAIM_MAX_SEEDS 64

// the per-seed lines of a compare record for method m: val[s][0..K], test[s], sft[s]; returns seeds
static int claim_seeds(const char *rec, const char *m, double val[][CMP_MAX_POINTS + 1], int *K, double *test,
                       double *sft) {
    char head[160];
    snprintf(head, sizeof head, "\n  %s seed_", m);
    int n = 0;
    for (const char *p = strstr(rec, head); p && n < CLAIM_MAX_SEEDS; p = strstr(p + 1, head)) {
        const char *q = strchr(p + strlen(head), ':');
        if (!q) break;
        q++;
        int k = 0;
        char *end;
        for (;;) {
            double v = strtod(q, &end);
            if (end == q) break;
            val[n][k++] = v;
            q = end;
        }
        *K = k - 1;
        if (sscanf(q, " | test %lf (SFT %lf)", &test[n], &sft[n]) != 2) break;
        n++;
    }
    return n;
}

// the tree map's record (tree_sweep.csv): the six-cell mean per seed of objective obj at (lr, k), window w
static int claim_tree(const char *rec, const char *lr, int k, const char *w, const char *obj, double *out) {
    int col = strcmp(w, "at250") ? 7 : 6, n = 0;   // lr,k,n,r_neg,seed,objective,at250,at1000
    double sum[CLAIM_MAX_SEEDS] = {0};
    int cnt[CLAIM_MAX_SEEDS] = {0};
    for (const char *line = strchr(rec, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char f[8][32];
        if (sscanf(line + 1, "%31[^,],%31[^,],%31[^,],%31[^,],%31[^,],%31[^,],%31[^,],%31[^,\n]", f[0], f[1], f[2],
                   f[3], f[4], f[5], f[6], f[7]) != 8)
            continue;
        int seed = atoi(f[4]);
        if (strcmp(f[0], lr) || atoi(f[1]) != k || strcmp(f[5], obj) || seed < 1 || seed > CLAIM_MAX_SEEDS) continue;
        sum[seed - 1] += atof(f[col]);
        cnt[seed - 1]++;
    }
    for (int s = 0; s < CLAIM_MAX_SEEDS; s++)
        if (cnt[s] == 6) out[n++] = sum[s] / 6;
    return n;
}

// one claim: computes STAT on RECORD; returns 0 and the value printed with FORMAT in `shown`
static int claim_value(const char *rec, char *stat, double scale, const char *format, char *shown, size_t cap,
                       char *why, size_t wcap) {
    static double va[CLAIM_MAX_SEEDS][CMP_MAX_POINTS + 1], vb[CLAIM_MAX_SEEDS][CMP_MAX_POINTS + 1];
    double ta[CLAIM_MAX_SEEDS], tb[CLAIM_MAX_SEEDS], sa[CLAIM_MAX_SEEDS], sb[CLAIM_MAX_SEEDS];
    double x[CLAIM_MAX_SEEDS], y[CLAIM_MAX_SEEDS];
    char *w[6] = {0};
    int nw = 0;
    for (char *t = strtok(stat, " "); t && nw < 6; t = strtok(NULL, " ")) w[nw++] = t;
    if (nw == 0) { snprintf(why, wcap, "no STAT"); return -1; }
    MeanCI c = {0, NAN, NAN, NAN};
    int K = 0, n = 0, nb = 0;
    if (!strcmp(w[0], "test") || !strcmp(w[0], "gain") || !strcmp(w[0], "sft")) {
        if (nw != 2 || (n = claim_seeds(rec, w[1], va, &K, ta, sa)) < 1) goto missing;
        for (int s = 0; s < n; s++) x[s] = ta[s] - (w[0][0] == 'g' ? sa[s] : 0);
        c = mean_ci(w[0][0] == 's' ? sa : x, n);
    } else if (!strcmp(w[0], "dtest")) {
        if (nw != 3 || (n = claim_seeds(rec, w[1], va, &K, ta, sa)) < 2 ||
            (nb = claim_seeds(rec, w[2], vb, &K, tb, sb)) != n)
            goto missing;
        c = paired_diff(ta, tb, n).d;
    } else if (!strcmp(w[0], "val") || !strcmp(w[0], "dval")) {
        int j = nw > 1 ? atoi(w[1]) : -1, two = w[0][0] == 'd';
        if (nw != 3 + two || (n = claim_seeds(rec, w[2], va, &K, ta, sa)) < 1 || j < 0 || j > K) goto missing;
        if (two && (nb = claim_seeds(rec, w[3], vb, &K, tb, sb)) != n) goto missing;
        for (int s = 0; s < n; s++) x[s] = va[s][j], y[s] = two ? vb[s][j] : 0;
        c = two ? paired_diff(x, y, n).d : mean_ci(x, n);
    } else if (!strcmp(w[0], "tree") || !strcmp(w[0], "treeobj")) {
        int obj = w[0][4] == 'o';
        if (nw != 4 + obj) goto missing;
        n = claim_tree(rec, w[1], atoi(w[2]), w[3], obj ? w[4] : "lambda-grpo", x);
        if (n < 2) goto missing;
        if (obj) c = mean_ci(x, n);
        else if (claim_tree(rec, w[1], atoi(w[2]), w[3], "grpo", y) != n) goto missing;
        else c = paired_diff(x, y, n).d;
    } else {
        snprintf(why, wcap, "unknown STAT '%s'", w[0]);
        return -1;
    }
    snprintf(shown, cap, format, c.mean * scale, c.half * scale);
    for (char *m = strstr(shown, "+-"); m; m = strstr(m, "+-")) memmove(m, m + 1, strlen(m));   // "+-0.3" -> "-0.3"
    return 0;
missing:
    snprintf(why, wcap, "the record has no per-seed values for '%s' (%d and %d seeds)", stat, n, nb);
    return -1;
}

// [from, to) of doc's text that the scan for "±" covers: README's "What the studies found"
// section, results.md above "## Older runs"
static void claim_scan_range(const char *doc, const char *text, const char **from, const char **to) {
    *from = *to = text;
    if (strstr(doc, "README.md")) {
        const char *a = strstr(text, "**What the studies found**");
        if (!a) return;
        const char *b = strstr(a, "\n\n");
        *from = a, *to = b ? b : a + strlen(a);
    } else if (strstr(doc, "results.md")) {
        const char *b = strstr(text, "\n## Older runs");
        *from = text, *to = b ? b : text + strlen(text);
    }
}

/* claims_run: the claims of notes/studies/claims.tsv against the docs at paths[0] (README.md's text)
   and paths[1] (notes/results.md's); *wrong: claims that fail, *loose: "±" outside every claim.
   Prints the first failures when verbose. Returns the number of claims. */
static int claims_run(const char *const paths[2], int verbose, int *wrong, int *loose) {
    static const char *docs[2] = {"README.md", "notes/results.md"};
    size_t n;
    *wrong = *loose = 0;
    char *tsv = (char *)read_all("notes/studies/claims.tsv", &n);
    if (!tsv) return 0;
    tsv = (char *)realloc(tsv, n + 1);
    tsv[n] = 0;
    char *text[2], *covered[2];
    for (int d = 0; d < 2; d++) {
        size_t dn = 0;
        text[d] = (char *)read_all(paths[d], &dn);
        text[d] = (char *)realloc(text[d], dn + 1);
        text[d][dn] = 0;
        covered[d] = (char *)calloc(dn + 1, 1);
    }
    int claims = 0, lineno = 0;
    for (char *line = tsv; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        if (line[0] && line[0] != '#') {
            char *f[6] = {0};
            int nf = 0;
            for (char *p = line; nf < 6; nf++) {
                f[nf] = p;
                char *tab = strchr(p, '\t');
                if (!tab) { nf++; break; }
                *tab = 0;
                p = tab + 1;
            }
            char why[512] = "", shown[128] = "";
            int d = !strcmp(f[0], docs[0]) ? 0 : !strcmp(f[0], docs[1]) ? 1 : -1;
            const char *at = d >= 0 && nf >= 2 ? strstr(text[d], f[1]) : NULL;
            size_t rn;
            char *rec = nf >= 4 ? (char *)read_all(f[2], &rn) : NULL;
            if (rec) rec = (char *)realloc(rec, rn + 1), rec[rn] = 0;
            if (d < 0 || (nf != 6 && !(nf == 4 && !strcmp(f[3], "summary"))))
                snprintf(why, sizeof why, "expected DOC TEXT RECORD STAT [SCALE FORMAT] (%d fields)", nf);
            else if (!at) snprintf(why, sizeof why, "'%s' does not stand in %s", f[1], f[0]);
            else if (!rec) snprintf(why, sizeof why, "cannot read the record %s", f[2]);
            else if (!strcmp(f[3], "summary")) {
                if (!strstr(rec, f[1])) snprintf(why, sizeof why, "'%s' does not stand in %s", f[1], f[2]);
            } else if (claim_value(rec, f[3], atof(f[4]), f[5], shown, sizeof shown, why, sizeof why) == 0 &&
                       !strstr(f[1], shown))
                snprintf(why, sizeof why, "%s gives %s, not in '%s'", f[2], shown, f[1]);
            for (const char *o = at; o; o = strstr(o + 1, f[1]))   // every place it stands is covered
                memset(covered[d] + (o - text[d]), 1, strlen(f[1]));
            free(rec);
            claims++;
            if (why[0] && (*wrong)++ < 5 && verbose) printf("  notes/studies/claims.tsv:%d: %s\n", lineno, why);
        }
        if (!nl) break;
        line = nl + 1;
    }
    for (int d = 0; d < 2; d++) {
        const char *from, *to;
        claim_scan_range(docs[d], text[d], &from, &to);
        for (const char *p = strstr(from, "±"); p && p < to; p = strstr(p + 1, "±"))
            if (!covered[d][p - text[d]]) {
                const char *ls = p;
                while (ls > text[d] && ls[-1] != '\n') ls--;
                if ((*loose)++ < 5 && verbose) printf("  %s: a ± outside every claim: %.100s\n", docs[d], ls);
            }
        free(text[d]);
        free(covered[d]);
    }
    free(tsv);
    return claims;
}

static void test_claims(void) {
    static const char *real[2] = {"README.md", "notes/results.md"};
    int wrong, loose;
    int claims = claims_run(real, 1, &wrong, &loose);
    check(claims > 0 && wrong == 0, "claims: every claim of README.md and results.md recomputes from its record",
          "%d claims, %d wrong", claims, wrong);
    check(claims > 0 && loose == 0, "claims: every ± in the README's findings and results.md's current page is a claim",
          "%d not", loose);
    // planted: one digit of the README's first claim changed, then a new ± line in its findings
    size_t n;
    char *readme = (char *)read_all("README.md", &n);
    readme = (char *)realloc(readme, n + 64);
    readme[n] = 0;
    char *find = strstr(readme, "**What the studies found**");
    char *pm = find ? strstr(find, "±") : NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/README_planted.md", TMPDIR_);
    const char *planted[2] = {path, "notes/results.md"};
    int w1 = 0, l1 = 0, w2 = 0, l2 = 0;
    if (pm && pm[-2] >= '0' && pm[-2] <= '9') {   // the digit before " ±"
        char was = pm[-2];
        pm[-2] = was == '9' ? '8' : was + 1;
        write_bytes(path, readme, n);
        claims_run(planted, 0, &w1, &l1);
        pm[-2] = was;
    }
    if (find && (find = strchr(find + 1, '\n')) != NULL) {   // after the paragraph's first line
        const char *ins = "\nλ-GRPO gains +9.9 ± 0.1 here";
        size_t len = strlen(ins);
        memmove(find + len, find, strlen(find) + 1);
        memcpy(find, ins, len);
        write_bytes(path, readme, strlen(readme));
        claims_run(planted, 0, &w2, &l2);
    }
    check(w1 > 0 && w2 == 0 && l2 > 0, "claims: a number planted in the README fails (a claim's digit; a new ±)",
          "changed digit: %d wrong; new line: %d loose", w1, l2);
    free(readme);
}
