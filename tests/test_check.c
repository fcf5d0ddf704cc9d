/*
tests/test_check.c: `./grpo check` against fixtures computed by verl, TRL and the authors'
λ-GRPO code (tests/fixtures/check/, written by tests/gen_check_fixtures.py), and its
rejection of malformed input files. Included into tests/test_grpo.c, which provides
check(ok, name, fmt, ...); run from the repository root after `make grpo`.

Fixtures: FIXTURE.txt is the batch; FIXTURE.expected holds, on line 1, the ./grpo check
options, then grpo.c's TSV (header, one row per token, `loss\t<value>`), then
`loss_scale\t<value>` = Σ |coef·weight·ℓ| over tokens (policy and KL parts separately).

Tolerance. The expected values are float64 from float32-representable inputs, so every
difference is grpo.c's float32 arithmetic (a handful of roundings of 6e-8 each). A cell passes
when |got − want| <= CHK_TOL · (|want| + floor), CHK_TOL = 1e-6, where floor is the column's
scale over the fixture: max |value| of that column (step_advantage: of the advantage column;
kl: max(1, max |kl|), because k3 = e^d − d − 1 is evaluated from O(1) terms and cancels for
small d). So large cells are held to 1e-6 relative and cells near 0 (a root step advantage
that sums to 0, a k3 of 1e-4, a policy gradient cancelled by the KL gradient) to 1e-6 of the
column's scale; that is ~8-16 float32 ulps, about 10x above what grpo.c shows today
(max 8.9e-8, loss 3.6e-8, the same for ./grpo built with -march=native on an AVX-512 CPU,
-march=x86-64 and -march=x86-64-v4) and far below any convention error (a wrong weight,
normaliser or eps changes cells by > 1e-4). The loss passes when |got − want| <= CHK_TOL ·
loss_scale: it is a sum of float32 terms accumulated in double, whose error is relative to
Σ|terms|, not to the sum (seq-mean-token-mean at ratio 1 sums to ~0). lambda_size and the
key columns line, group, t, token must match exactly.

Malformed inputs: every tests/fixtures/check/bad_*.txt names its options and the line of the
error in two comments (`# check-options: ...`, `# check-error-line: N`); grpo check must exit
with status 1, print nothing on stdout, and start stderr with `FILE:N:`. An optional third
comment, `# check-error-contains: TEXT`, names text the message must hold.
*/
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHK_TOL 1e-6
#define CHK_NCOL 11                  // line group t token lambda_size | weight advantage step_advantage ratio kl dloss_dlogp
#define CHK_NINT 5
#define CHK_DIR "tests/fixtures/check/"

static const char *chk_cols[CHK_NCOL] = {"line", "group", "t", "token", "lambda_size", "weight", "advantage",
                                         "step_advantage", "ratio", "kl", "dloss_dlogp"};

typedef struct {
    int n, cap;
    double (*row)[CHK_NCOL];
    double loss, loss_scale;
    int have_loss, have_scale;
    char err[200];                   // first parse problem, "" when none
} ChkTable;

// Reads a whole file (or NULL).
static char *chk_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = (char *)malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) { cap *= 2; buf = (char *)realloc(buf, cap); }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

/* chk_parse: grpo.c's check output in text (header, rows, loss line, optional loss_scale
   line). Lines starting with '#' and empty lines are skipped. */
static void chk_parse(char *text, ChkTable *tb) {
    memset(tb, 0, sizeof *tb);
    int seen_header = 0, lineno = 0;
    for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t L = strlen(ln);
        if (L && ln[L - 1] == '\r') ln[--L] = 0;
        if (L == 0 || ln[0] == '#') continue;
        if (!seen_header) {
            char want[200] = "";
            for (int c = 0; c < CHK_NCOL; c++) { strcat(want, chk_cols[c]); if (c < CHK_NCOL - 1) strcat(want, "\t"); }
            if (strcmp(ln, want) && !tb->err[0]) snprintf(tb->err, sizeof tb->err, "header differs: '%.120s'", ln);
            seen_header = 1;
            continue;
        }
        if (!strncmp(ln, "loss_scale\t", 11)) { tb->loss_scale = strtod(ln + 11, NULL); tb->have_scale = 1; continue; }
        if (!strncmp(ln, "loss\t", 5)) { tb->loss = strtod(ln + 5, NULL); tb->have_loss = 1; continue; }
        if (tb->n == tb->cap) {
            tb->cap = tb->cap ? 2 * tb->cap : 64;
            tb->row = (double (*)[CHK_NCOL])realloc(tb->row, (size_t)tb->cap * sizeof *tb->row);
        }
        char *p = ln, *end;
        int ok = 1;
        for (int c = 0; c < CHK_NCOL && ok; c++) {
            double v = strtod(p, &end);
            if (end == p) { ok = 0; break; }
            tb->row[tb->n][c] = v;
            p = end;
            if (c < CHK_NCOL - 1) { if (*p == '\t') p++; else ok = 0; }
        }
        if ((!ok || *p) && !tb->err[0])
            snprintf(tb->err, sizeof tb->err, "output line %d is not %d numbers: '%.80s'", lineno, CHK_NCOL, ln);
        tb->n++;
    }
    if (!seen_header && !tb->err[0]) snprintf(tb->err, sizeof tb->err, "no header line");
    if (!tb->have_loss && !tb->err[0]) snprintf(tb->err, sizeof tb->err, "no loss line");
}

// Runs cmd (which redirects its own stderr) and returns its exit status (-1: not run); *out: its stdout.
static int chk_run(const char *cmd, char **out) {
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    *out = NULL;
    if (!p) return -1;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = (char *)malloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) { cap *= 2; buf = (char *)realloc(buf, cap); }
    }
    buf[n] = 0;
    *out = buf;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void chk_one_fixture(const char *expected_path) {
    char name[256], txt[512], cmd[2048], errpath[] = "/tmp/grpo_chk_err_XXXXXX";
    const char *base = strrchr(expected_path, '/') ? strrchr(expected_path, '/') + 1 : expected_path;
    snprintf(name, sizeof name, "check fixture %.*s", (int)(strlen(base) - strlen(".expected")), base);
    snprintf(txt, sizeof txt, "%.*s.txt", (int)(strlen(expected_path) - strlen(".expected")), expected_path);
    char *exp_text = chk_slurp(expected_path);
    if (!exp_text) { check(0, name, "cannot read %s", expected_path); return; }
    char *nl = strchr(exp_text, '\n');
    if (!nl) { check(0, name, "%s has no options line", expected_path); free(exp_text); return; }
    *nl = 0;
    int fd = mkstemp(errpath);
    if (fd >= 0) close(fd);
    snprintf(cmd, sizeof cmd, "%s check %s %s 2>%s", grpo_bin(), exp_text, txt, errpath);
    char *out;
    int rc = chk_run(cmd, &out);
    ChkTable want, got;
    chk_parse(nl + 1, &want);
    if (rc != 0 || !out) {
        char *err = chk_slurp(errpath);
        check(0, name, "exit status %d: %s; stderr: %.300s", rc, cmd, err ? err : "");
        free(err);
        goto done_nogot;
    }
    chk_parse(out, &got);
    if (want.err[0] || !want.have_scale) { check(0, name, "bad fixture: %s", want.err[0] ? want.err : "no loss_scale"); goto done; }
    if (got.err[0]) { check(0, name, "grpo output: %s", got.err); goto done; }
    if (got.n != want.n) { check(0, name, "%d token rows, expected %d", got.n, want.n); goto done; }
    // column scales (floors), see the header comment
    double floor_[CHK_NCOL] = {0};
    for (int i = 0; i < want.n; i++)
        for (int c = CHK_NINT; c < CHK_NCOL; c++) {
            int src = c == 7 ? 6 : c;                 // step_advantage: the advantage column's scale
            if (fabs(want.row[i][src]) > floor_[c]) floor_[c] = fabs(want.row[i][src]);
        }
    if (floor_[9] < 1.0) floor_[9] = 1.0;             // kl
    double worst = 0.0;
    int worst_col = -1, bad = 0;
    for (int i = 0; i < want.n; i++)
        for (int c = 0; c < CHK_NCOL; c++) {
            double a = got.row[i][c], b = want.row[i][c];
            double rel = c < CHK_NINT ? (a == b ? 0.0 : INFINITY) : fabs(a - b) / (fabs(b) + floor_[c]);
            if (!(rel <= worst)) { worst = rel; worst_col = c; }
            if (!(rel <= CHK_TOL)) {
                if (bad < 3)
                    printf("      line %g t %g %s: got %.9g, expected %.9g\n", want.row[i][0], want.row[i][2],
                           chk_cols[c], a, b);
                bad++;
            }
        }
    double loss_rel = fabs(got.loss - want.loss) / (want.loss_scale > 0 ? want.loss_scale : 1.0);
    if (!(loss_rel <= CHK_TOL)) {
        if (bad < 3) printf("      loss: got %.9g, expected %.9g (scale %.3g)\n", got.loss, want.loss, want.loss_scale);
        bad++;
    }
    if (!(loss_rel <= worst)) { worst = loss_rel; worst_col = CHK_NCOL; }
    check(bad == 0, name, "%d rows, max rel diff %.2e (%s), loss %.2e (tol %.0e)%s", want.n, worst,
          worst_col < 0 ? "-" : worst_col == CHK_NCOL ? "loss" : chk_cols[worst_col], loss_rel, CHK_TOL,
          bad ? ", mismatches above" : "");
done:
    free(got.row);
done_nogot:
    free(want.row);
    free(out);
    free(exp_text);
    unlink(errpath);
}

// Reads `# KEY value` from a bad_*.txt file into val (empty if absent).
static void chk_comment_field(const char *text, const char *key, char *val, size_t cap) {
    val[0] = 0;
    const char *p = strstr(text, key);
    if (!p) return;
    p += strlen(key);
    while (*p == ' ') p++;
    size_t n = strcspn(p, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(val, p, n);
    val[n] = 0;
    while (n && (val[n - 1] == ' ' || val[n - 1] == '\r')) val[--n] = 0;
}

static void chk_one_bad(const char *path) {
    char name[256], opts[256], line[32], cmd[2048], prefix[600], contains[256];
    char outpath[] = "/tmp/grpo_chk_out_XXXXXX", errpath[] = "/tmp/grpo_chk_err_XXXXXX";
    snprintf(name, sizeof name, "check rejects %s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    char *text = chk_slurp(path);
    if (!text) { check(0, name, "cannot read %s", path); return; }
    chk_comment_field(text, "# check-options:", opts, sizeof opts);
    chk_comment_field(text, "# check-error-line:", line, sizeof line);
    chk_comment_field(text, "# check-error-contains:", contains, sizeof contains);
    free(text);
    if (!line[0]) { check(0, name, "%s lacks a '# check-error-line: N' comment", path); return; }
    int fo = mkstemp(outpath), fe = mkstemp(errpath);
    if (fo >= 0) close(fo);
    if (fe >= 0) close(fe);
    snprintf(cmd, sizeof cmd, "%s check %s %s >%s 2>%s", grpo_bin(), opts, path, outpath, errpath);
    fflush(stdout);
    int st = system(cmd);
    int rc = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
    char *out = chk_slurp(outpath), *err = chk_slurp(errpath);
    snprintf(prefix, sizeof prefix, "%s:%s:", path, line);
    int out_empty = out && out[0] == 0;
    int err_ok = err && !strncmp(err, prefix, strlen(prefix));
    int text_ok = !contains[0] || (err && strstr(err, contains));
    if (err) err[strcspn(err, "\n")] = 0;
    check(rc == 1 && out_empty && err_ok && text_ok, name,
          "exit %d (want 1), stdout %s, stderr: %.150s%s%s%s", rc, out_empty ? "empty" : "NOT empty",
          err ? err : "(none)", err_ok ? "" : "  <- want prefix FILE:LINE:",
          text_ok ? "" : "  <- want text: ", text_ok ? "" : contains);
    free(out);
    free(err);
    unlink(outpath);
    unlink(errpath);
}

static void test_check_fixtures(void) {
    glob_t g;
    size_t n = 0;
    if (glob(CHK_DIR "*.expected", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) chk_one_fixture(g.gl_pathv[i]);
        n = g.gl_pathc;
        globfree(&g);
    }
    check(n >= 10, "check fixtures found", "%zu in " CHK_DIR " (gen_check_fixtures.py writes them)", n);
    n = 0;
    if (glob(CHK_DIR "bad_*.txt", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) chk_one_bad(g.gl_pathv[i]);
        n = g.gl_pathc;
        globfree(&g);
    }
    check(n >= 8, "check malformed-input files found", "%zu bad_*.txt in " CHK_DIR, n);
}

/* `./grpo check --mask-truncated 1`: a line with truncated=1 (the trainer's verdict: cut at its
   budget without EOS) contributes no loss and is in no normaliser, under every --loss-agg.
   Group of 4, rewards 1,0,1,0 with --adv-std none: a = ±0.5; ratio 1, β 0, GRPO, so
   ℓ_{i,t} = −a_i and ∂loss/∂logp_{i,t} = −c_i a_i with the factors c_i of the definition
   (notes/conventions.md) over the kept completions, lengths 3, 2, 4 (Σ 9, N 3). Line 2
   (4 tokens, a = −0.5) is truncated; line 4 has 4 tokens too but is not. */
static void test_check_mask_truncated(void) {
    const char *path = tmp_path("/tmp/grpo_test/mask_truncated.txt");
    FILE *f = fopenCheck(path, "w");
    fprintf(f, "group=0 reward=1 tokens=5,6,151645 logp=-1,-1,-1 truncated=0\n"
               "group=0 reward=0 tokens=5,7,8,9 logp=-1,-1,-1,-1 truncated=1\n"
               "group=0 reward=1 tokens=4,151645 logp=-1,-1 truncated=0\n"
               "group=0 reward=0 tokens=4,6,7,151645 logp=-1,-1,-1,-1 truncated=0\n");
    fcloseCheck(f);
    const int len[4] = {3, 4, 2, 4}, masked[4] = {0, 1, 0, 0}, max_new = 4;
    const float a[4] = {0.5f, -0.5f, 0.5f, -0.5f};
    const char *modes[4] = {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                            "seq-mean-token-sum-norm"};
    for (int mask = 1; mask >= 0; mask--)
        for (int m = 0; m < 4; m++) {
            double kept = 0, kept_tokens = 0, coef[4], want_loss = 0;
            for (int i = 0; i < 4; i++)
                if (!(mask && masked[i])) { kept++; kept_tokens += len[i]; }
            for (int i = 0; i < 4; i++) {
                double c = 1.0 / (kept * max_new);               // seq-mean-token-sum-norm
                if (m == 0) c = 1.0 / kept_tokens;                // token-mean
                if (m == 1) c = 1.0 / (kept * len[i]);            // seq-mean-token-mean
                if (m == 2) c = 1.0 / kept;                       // seq-mean-token-sum
                coef[i] = (mask && masked[i]) ? 0.0 : c;
                want_loss -= coef[i] * len[i] * a[i];
            }
            char cmd[1024], *out = NULL, name[160];
            snprintf(cmd, sizeof cmd, "%s check --objective grpo --adv-std none --loss-agg %s "
                     "--max-new-tokens %d --mask-truncated %d %s 2>/dev/null", grpo_bin(), modes[m], max_new,
                     mask, path);
            int rc = chk_run(cmd, &out);
            ChkTable tb;
            chk_parse(out ? out : (char *)"", &tb);
            int bad = rc != 0 || tb.err[0] || tb.n != 13;
            double worst = 0;
            for (int r = 0; r < tb.n && !bad; r++) {
                int i = (int)tb.row[r][0] - 1;            // the completion's line in the file
                double want = -coef[i] * a[i], got = tb.row[r][10];
                worst = fmax(worst, fabs(got - want));
                if (mask && masked[i]) bad |= got != 0.0;
            }
            worst = fmax(worst, fabs(tb.loss - want_loss));
            snprintf(name, sizeof name, "check --mask-truncated %d, %s: loss %.6g and dloss_dlogp", mask,
                     modes[m], want_loss);
            check(!bad && worst <= 1e-7, name, "exit %d, %d rows, max abs diff %.2e%s", rc, tb.n, worst,
                  tb.err[0] ? tb.err : "");
            free(tb.row);
            free(out);
        }
    // masking needs every line's verdict; a missing or malformed one is the file's error
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "printf 'group=0 reward=1 tokens=1 truncated=0\\n"
             "group=0 reward=0 tokens=2,3\\n' | %s check --mask-truncated 1 - 2>&1 >/dev/null", grpo_bin());
    char *out = NULL;
    int rc = chk_run(cmd, &out);
    check(rc == 1 && out && !strncmp(out, "-:2: truncated=0|1 is required", 30),
          "check --mask-truncated 1: a line without truncated= is refused, FILE:LINE", "exit %d: %.100s", rc,
          out ? out : "");
    free(out);
}
