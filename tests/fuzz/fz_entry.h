/*
tests/fuzz/fz_entry.h: the entry points the grpo.c fuzz harnesses drive, shared by the
libFuzzer harnesses (tests/fuzz/fuzz_*.c) and the regression replay (tests/fuzz/replay.c).
Include after grpo.c. Every function is static with an fz_ prefix.

Each fz_run_<harness>(path, data, size) gets the input twice: as a file (path) for the
parsers that read files, and as bytes (data, size) for the in-memory checks. It calls the
entry point of grpo.c, frees what that returned, and checks properties ("oracles") that
must hold for every input grpo.c ACCEPTS; a violated property calls fz_oracle_fail, which
prints "fz oracle:" and aborts (a crash to libFuzzer, a signal to the replay).
grpo.c rejecting an input with exit(1)/exit(2) is the expected path, not a failure.
*/
#ifndef FZ_ENTRY_H
#define FZ_ENTRY_H
#include <stdarg.h>
#include <ctype.h>

#ifndef FZ_LIBFUZZER
#define fz_real_stderr stderr
#endif

__attribute__((noreturn, format(printf, 1, 2))) static void fz_oracle_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
#ifdef FZ_LIBFUZZER
    FILE *e = fz_real_stderr;
#else
    FILE *e = stderr;
#endif
    fprintf(e, "fz oracle: ");
    vfprintf(e, fmt, ap);
    fprintf(e, "\n");
    fflush(e);
    va_end(ap);
    abort();
}
#define FZ_ASSERT(cond, ...) do { if (!(cond)) fz_oracle_fail(__VA_ARGS__); } while (0)

/* ------------------------------------------------------------------------------------
   1. dataset: load_dataset(d, path, maxT = 64, need_completion = size & 1)
   Oracles for an accepted file, from the format description (grpo.c "Task data"):
   the examples are exactly the lines (split at '\n', trailing '\r'/'\n' removed) that are
   neither empty nor start with '#', in order; no such line holds a NUL byte (the loader
   promises "NUL byte in line"); each example's tokens decode back to its prompt and
   completion text, fit in maxT with <bos>/<eos>, and its numbers re-parse. */
#define FZ_DATASET_MAXT 64

static void fz_run_dataset(const char *path, const uint8_t *data, size_t size) {
    int need = (int)(size & 1);
    Dataset d;
    load_dataset(&d, path, FZ_DATASET_MAXT, need, &TASKS[TASK_COUNTDOWN]);
    char text[FZ_DATASET_MAXT * 8];
    int ex = 0, lineno = 0;
    size_t pos = 0;
    while (pos < size) {
        size_t end = pos;
        while (end < size && data[end] != '\n') end++;
        lineno++;
        size_t len = end - pos;
        const char *line = (const char *)data + pos;
        pos = end + 1;
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n')) len--;
        if (len == 0 || line[0] == '#') continue;
        FZ_ASSERT(!memchr(line, 0, len), "dataset: line %d holds a NUL byte but the file was accepted", lineno);
        FZ_ASSERT(ex < d.n, "dataset: line %d is an example but only %d examples were loaded", lineno, d.n);
        const char *tab = (const char *)memchr(line, '\t', len);
        size_t plen = tab ? (size_t)(tab - line) : len, clen = tab ? len - plen - 1 : 0;
        const int *pt = d.prompt + (size_t)ex * d.maxT, *ct = d.completion + (size_t)ex * d.maxT;
        FZ_ASSERT(d.prompt_len[ex] == (int)plen + 1 && pt[0] == TOK_BOS,
                  "dataset: example %d (line %d): prompt_len %d, expected %zu", ex, lineno, d.prompt_len[ex], plen + 1);
        FZ_ASSERT(d.completion_len[ex] == (clen ? (int)clen + 1 : 0),
                  "dataset: example %d (line %d): completion_len %d, expected %zu", ex, lineno, d.completion_len[ex], clen + 1);
        FZ_ASSERT(!need || clen > 0, "dataset: line %d has no completion but need_completion", lineno);
        FZ_ASSERT(1 + (int)plen + (int)clen + 1 <= d.maxT, "dataset: line %d does not fit maxT %d", lineno, d.maxT);
        for (int t = 1; t < d.prompt_len[ex]; t++)
            FZ_ASSERT(pt[t] >= NUM_SPECIAL && pt[t] < VOCAB_SIZE, "dataset: line %d prompt token %d out of range", lineno, pt[t]);
        for (int t = 0; t + 1 < d.completion_len[ex]; t++)
            FZ_ASSERT(ct[t] >= NUM_SPECIAL && ct[t] < VOCAB_SIZE, "dataset: line %d completion token %d out of range", lineno, ct[t]);
        FZ_ASSERT(!clen || ct[clen] == TOK_EOS, "dataset: line %d completion does not end with <eos>", lineno);
        decode(pt + 1, (int)plen, text, sizeof text);
        FZ_ASSERT(strlen(text) == plen && !memcmp(text, line, plen), "dataset: line %d prompt does not decode back", lineno);
        decode(ct, (int)clen, text, sizeof text);
        FZ_ASSERT(strlen(text) == clen && !memcmp(text, tab ? tab + 1 : "", clen), "dataset: line %d completion does not decode back", lineno);
        int nums[MAX_NUMS], n = 0, target = 0;
        FZ_ASSERT(countdown_parse_prompt(line, (int)plen, nums, MAX_NUMS, &n, &target) == 0 && n == d.num_count[ex] &&
                  target == d.target[ex] && !memcmp(nums, d.nums + (size_t)ex * MAX_NUMS, n * sizeof(int)),
                  "dataset: line %d numbers differ from a re-parse", lineno);
        ex++;
    }
    FZ_ASSERT(ex == d.n, "dataset: %d examples loaded, the file has %d example lines", d.n, ex);
    free_dataset(&d);
}

/* ------------------------------------------------------------------------------------
   2. check: cmd_check(argv = {"check", <option set>, path}) runs the whole ./grpo check
   computation (read_check_file, grouping, compute_advantages, build_prefix_tree,
   loss_agg_coef, grpo_token_loss, the TSV printout to stdout).
   Option set: an input that starts with "#o<digit>" (a comment to the parser) selects
   FZ_CHECK_OPTS[digit % FZ_NUM_CHECK_OPTS]; otherwise set 0 (the defaults).
   Oracle for an accepted file: the file is read again with read_check_file, grouped by
   group id, and each group's prefix tree is compared with a brute-force |λ(i,t)|
   (completions j of the group with len_j > t and the same tokens 0..t), node membership
   and each node's step advantage (mean of its members' advantages). */
static const char *FZ_CHECK_OPTS[][16] = {
    {NULL},
    {"--adv-std", "none", "--loss-agg", "seq-mean-token-mean", NULL},
    {"--objective", "grpo", "--beta", "0.04", "--clip-eps-high", "0.28", NULL},
    {"--adv-std-scope", "batch", "--adv-eps", "0", "--loss-agg", "seq-mean-token-sum", NULL},
    {"--adv-std", "population", "--loss-agg", "seq-mean-token-sum-norm", "--max-new-tokens", "1", NULL},
    {"--objective", "lambda-grpo", "--beta", "1e6", "--clip-eps-low", "0.999999", "--clip-eps-high", "1e6", "--adv-eps", "1", NULL},
    {"--adv-std", "none", "--adv-std-scope", "batch", "--objective", "grpo", "--loss-agg", "token-mean", NULL},
    {"--adv-std", "sample", "--adv-std-scope", "batch", "--beta", "0.04", "--adv-eps", "0", NULL},
};
#define FZ_NUM_CHECK_OPTS ((int)(sizeof FZ_CHECK_OPTS / sizeof FZ_CHECK_OPTS[0]))

static int fz_check_option_set(const uint8_t *data, size_t size) {
    if (size >= 3 && data[0] == '#' && data[1] == 'o' && data[2] >= '0' && data[2] <= '9')
        return (data[2] - '0') % FZ_NUM_CHECK_OPTS;
    return 0;
}

static void fz_check_tree_oracle(const char *path, const ObjectiveConfig *cfg) {
    CheckRecord *rec;
    int N = read_check_file(path, &rec);
    int *idx = (int *)malloc(N * sizeof(int)), maxlen = 1;
    for (int i = 0; i < N; i++) { idx[i] = i; if (rec[i].n > maxlen) maxlen = rec[i].n; }
    for (int a = 1; a < N; a++) {           // stable insertion sort by group id
        int x = idx[a], b = a - 1;
        while (b >= 0 && rec[idx[b]].group > rec[x].group) { idx[b + 1] = idx[b]; b--; }
        idx[b + 1] = x;
    }
    int *starts = (int *)malloc((N + 1) * sizeof(int)), G = 0;
    for (int a = 0; a < N; a++) if (a == 0 || rec[idx[a]].group != rec[idx[a - 1]].group) starts[G++] = a;
    starts[G] = N;
    float *reward = (float *)malloc(N * sizeof(float)), *adv = (float *)malloc(N * sizeof(float));
    int *len = (int *)malloc(N * sizeof(int));
    const int **toks = (const int **)malloc(N * sizeof(int *));
    for (int a = 0; a < N; a++) { reward[a] = rec[idx[a]].reward; len[a] = rec[idx[a]].n; toks[a] = rec[idx[a]].tokens; }
    compute_advantages(adv, reward, G, starts, cfg);
    int *lam = (int *)calloc((size_t)N * maxlen, sizeof(int)), *node = (int *)calloc((size_t)N * maxlen, sizeof(int));
    int kmax = 1;
    for (int g = 0; g < G; g++) if (starts[g + 1] - starts[g] > kmax) kmax = starts[g + 1] - starts[g];
    PrefixTree tree;
    build_prefix_tree_buffers(&tree, kmax);
    int *lcp = (int *)malloc((size_t)kmax * kmax * sizeof(int));
    for (int g = 0; g < G; g++) {
        int s = starts[g], k = starts[g + 1] - s;
        int nn = build_prefix_tree(&tree, toks + s, len + s, k, reward + s, adv + s,
                                   lam + (size_t)s * maxlen, node + (size_t)s * maxlen, maxlen);
        int nonempty = 0;
        for (int i = 0; i < k; i++) nonempty += len[s + i] > 0;
        FZ_ASSERT(nn >= 0 && nn <= 2 * nonempty, "check: group %d: %d nodes for %d completions", g, nn, nonempty);
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                int m = len[s + i] < len[s + j] ? len[s + i] : len[s + j], c = 0;
                while (c < m && toks[s + i][c] == toks[s + j][c]) c++;
                lcp[(size_t)i * k + j] = c;
            }
        for (int i = 0; i < k; i++)
            for (int t = 0; t < len[s + i]; t++) {
                int want = 0;
                double asum = 0.0;
                for (int j = 0; j < k; j++) if (lcp[(size_t)i * k + j] > t) { want++; asum += adv[s + j]; }
                size_t at = (size_t)(s + i) * maxlen + t;
                FZ_ASSERT(lam[at] == want, "check: group %d completion %d t=%d: |λ| %d, brute force %d", g, i, t, lam[at], want);
                int nd = node[at];
                FZ_ASSERT(nd >= 0 && nd < nn, "check: node index %d out of [0,%d)", nd, nn);
                const ProcessNode *p = &tree.nodes[nd];
                FZ_ASSERT(p->size == want && p->start <= t && t < p->end,
                          "check: group %d completion %d t=%d: node %d size %d span [%d,%d)", g, i, t, nd, p->size, p->start, p->end);
                double mean = asum / want, tol = 1e-5 * (fabs(mean) + 1.0);
                FZ_ASSERT(!(fabs(p->step_advantage - mean) > tol) || !isfinite(mean),
                          "check: group %d completion %d t=%d: step advantage %g, brute force %g", g, i, t, p->step_advantage, mean);
            }
    }
    free(lcp); free_prefix_tree(&tree); free(lam); free(node); free(toks); free(len); free(adv); free(reward);
    free(starts); free(idx);
    for (int i = 0; i < N; i++) { free(rec[i].tokens); free(rec[i].logp); free(rec[i].logp_old); free(rec[i].logp_ref); }
    free(rec);
}

static void fz_run_check(const char *path, const uint8_t *data, size_t size) {
    int set = fz_check_option_set(data, size);
    char *argv[24];
    int argc = 0;
    argv[argc++] = (char *)"check";
    for (int i = 0; FZ_CHECK_OPTS[set][i]; i++) argv[argc++] = (char *)FZ_CHECK_OPTS[set][i];
    argv[argc++] = (char *)path;
    argv[argc] = NULL;
    Options o;
    default_options(&o);
    int rc = cmd_check(argc, argv, &o);
    fflush(stdout);
    FZ_ASSERT(rc == 0, "check: cmd_check returned %d", rc);
    ObjectiveConfig cfg = o.obj;     // the options as cmd_check parsed them
    cfg.max_new_tokens = o.max_new_tokens;
    fz_check_tree_oracle(path, &cfg);
}

/* ------------------------------------------------------------------------------------
   3. checkpoint: load_checkpoint(path, &m, max_batch 2, NULL); when the file holds
   optimizer state, again with a TrainState. Oracles for an accepted file: its size is
   exactly header + vocabulary + parameters (+ AdamW m, v, the RNG state and the run record), its
   vocabulary bytes are exactly this build's, and the model (any shape the header allows)
   runs forward, backward and the KV-cache decode, whose logits match the forward pass. */
/* Runs the loaded model on a batch of FZ_CKPT_B sequences of T = min(9, maxT) tokens
   (B·T = 18 rows: a full 6-row tile of the register-tiled matmul plus a remainder):
   forward, log-probs, backward, then the same tokens through the KV cache one position at
   a time. When the weights are moderate, the incremental logits must equal the full
   forward pass (as in test_kv_cache). */
#define FZ_CKPT_B 2
static void fz_exercise_model(GPT *m) {
    int V = m->config.vocab_size, T = m->config.max_seq_len < 9 ? m->config.max_seq_len : 9, B = FZ_CKPT_B;
    int inputs[FZ_CKPT_B * 9] = {0}, targets[FZ_CKPT_B * 9] = {0}, tok[FZ_CKPT_B], pos[FZ_CKPT_B];
    float logp[FZ_CKPT_B * 9], dlogp[FZ_CKPT_B * 9];
    for (int i = 0; i < B * T; i++) {
        inputs[i] = i % T == 0 ? TOK_BOS : NUM_SPECIAL + (i * 7) % (V - NUM_SPECIAL);
        targets[i] = i % 5 == 4 ? -1 : (i * 11) % V;
        dlogp[i] = -1.0f / (B * T);
    }
    gpt_forward(m, inputs, B, T);
    logprob_forward(logp, m->acts.probs, m->acts.logits, targets, B * T, V, 1.0f, NULL);
    gpt_zero_grad(m);
    logprob_backward(m->grads_acts.logits, m->acts.probs, targets, dlogp, B * T, V, 1.0f);
    gpt_backward(m, inputs);
    float pmax = 0.0f;
    for (size_t i = 0; i < m->num_parameters; i++) {
        float a = fabsf(m->params_memory[i]);
        if (!(a <= pmax)) pmax = a;       // NaN makes pmax NaN: no comparison below
    }
    KVCache kv;
    build_kvcache(&kv, &m->config, B);
    double maxdiff = 0.0, maxabs = 0.0;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) { tok[b] = inputs[b * T + t]; pos[b] = t; }
        gpt_decode_step(m, &kv, tok, pos, B);
        for (int b = 0; b < B; b++)
            for (int v = 0; v < V; v++) {
                double full = m->acts.logits[((size_t)b * T + t) * V + v], inc = kv.logits[(size_t)b * V + v];
                if (fabs(full - inc) > maxdiff) maxdiff = fabs(full - inc);
                if (fabs(full) > maxabs) maxabs = fabs(full);
            }
    }
    free_kvcache(&kv);
    if (pmax <= 4.0f && isfinite(maxabs))
        FZ_ASSERT(maxdiff <= 1e-3 * (1.0 + maxabs), "checkpoint: KV-cache logits differ from the forward pass by %g (max |logit| %g, "
                  "maxT %d L %d NH %d C %d)", maxdiff, maxabs, m->config.max_seq_len, m->config.num_layers,
                  m->config.num_heads, m->config.channels);
}

static void fz_run_checkpoint(const char *path, const uint8_t *data, size_t size) {
    GPT m;
    int has_opt = load_checkpoint(path, &m, FZ_CKPT_B, NULL);
    int32_t h[CKPT_HEADER_INTS];
    FZ_ASSERT(size >= sizeof h, "checkpoint: accepted a %zu-byte file", size);
    memcpy(h, data, sizeof h);
    char ours[512];
    int vlen = vocab_string(ours, sizeof ours);
    FZ_ASSERT(h[9] == vlen && !memcmp(data + sizeof h, ours, vlen),
              "checkpoint: accepted a vocabulary of %d bytes that is not this build's %d bytes", h[9], vlen);
    size_t record = has_opt && h[1] >= 2 ? (size_t)h[11] : 0;   // format 2: the run record, after the RNG
    size_t want = sizeof h + (size_t)h[9] + m.num_parameters * sizeof(float) * (has_opt ? 3 : 1) +
                  (has_opt ? 32 : 0) + record;
    FZ_ASSERT(want == size, "checkpoint: accepted %zu bytes, the header implies %zu", size, want);
    fz_exercise_model(&m);
    free_gpt(&m);
    if (has_opt) {
        TrainState st = {0};
        FZ_ASSERT(load_checkpoint(path, &m, FZ_CKPT_B, &st) == 1, "checkpoint: optimizer state seen once, not twice");
        FZ_ASSERT(st.step == h[8], "checkpoint: step %d, header %d", st.step, h[8]);
        free_gpt(&m);
    }
}

/* ------------------------------------------------------------------------------------
   4. verify: countdown_parse_prompt and countdown_verify (plus countdown_well_formed and
   countdown_reward) on exact-length heap copies, so ASan sees any read past the end.
   Input: "prompt<TAB>completion" (text mode; a prompt that does not parse is replaced by
   "7 3 5>26:"), or 0xFF n int32[n] target(int32) completion (binary mode, n = byte % 20,
   little-endian; nums may be any ints, n may exceed COUNTDOWN_MAX_POOL).
   Oracles: an independent reference parser/verifier (fz_ref_*) written from the rules in
   grpo.c's comment agrees on every input; an accepted prompt prints back to itself;
   a correct completion is well formed, no proper prefix and no one-byte extension of it
   is correct, and countdown_reward on its tokens (+ <eos>) gives the same 1. */
static int fz_ref_number(const char *s, int len, int *pos, long long *v) {
    int i = *pos;
    while (i < len && isdigit((unsigned char)s[i])) i++;
    int nd = i - *pos;
    if (nd < 1 || nd > COUNTDOWN_MAX_DIGITS || (s[*pos] == '0' && nd > 1)) return 0;
    long long x = 0;
    for (int j = *pos; j < i; j++) x = x * 10 + (s[j] - '0');
    *v = x; *pos = i;
    return 1;
}

static int fz_ref_parse_prompt(const char *p, int len, int max_nums, long long *nums, int *n, long long *target) {
    int pos = 0, k = 0;
    long long v;
    for (;;) {
        if (!fz_ref_number(p, len, &pos, &v)) return 0;
        if (k == max_nums) return 0;
        nums[k++] = v;
        if (pos < len && p[pos] == ' ') { pos++; continue; }
        if (pos < len && p[pos] == '>') { pos++; break; }
        return 0;
    }
    if (!fz_ref_number(p, len, &pos, &v) || pos != len - 1 || p[pos] != ':') return 0;
    *n = k; *target = v;
    return 1;
}

// one step "a op b=c" exactly filling s[0..len)
static int fz_ref_step(const char *s, int len, long long *a, char *op, long long *b, long long *c) {
    int pos = 0;
    if (!fz_ref_number(s, len, &pos, a) || pos >= len) return 0;
    *op = s[pos++];
    if (!strchr("+-*/", *op) || *op == 0) return 0;
    if (!fz_ref_number(s, len, &pos, b) || pos >= len || s[pos++] != '=') return 0;
    return fz_ref_number(s, len, &pos, c) && pos == len;
}

static int fz_ref_well_formed(const char *s, int len) {
    long long a, b, c;
    char op;
    int start = 0;
    for (int i = 0; i <= len; i++)
        if (i == len || s[i] == ',') {
            if (!fz_ref_step(s + start, i - start, &a, &op, &b, &c)) return 0;
            start = i + 1;
        }
    return 1;
}

static int fz_ref_verify(const int *nums, int n, int target, const char *s, int len) {
    if (n < 1 || n > COUNTDOWN_MAX_POOL || len <= 0) return 0;
    long long pool[COUNTDOWN_MAX_POOL + 1];
    int size = n, start = 0;
    for (int i = 0; i < n; i++) pool[i] = nums[i];
    for (int i = 0; i <= len; i++) {
        if (i < len && s[i] != ',') continue;
        long long a, b, c, r;
        char op;
        if (!fz_ref_step(s + start, i - start, &a, &op, &b, &c)) return 0;
        start = i + 1;
        int ia = -1, ib = -1;
        for (int j = 0; j < size; j++) if (pool[j] == a) { ia = j; break; }
        if (ia < 0) return 0;
        for (int j = 0; j < size; j++) if (j != ia && pool[j] == b) { ib = j; break; }
        if (ib < 0) return 0;
        if (op == '+') r = a + b;
        else if (op == '-') r = a - b;
        else if (op == '*') r = a * b;
        else { if (b == 0 || a % b) return 0; r = a / b; }
        if (r <= 0 || r != c) return 0;
        long long keep[COUNTDOWN_MAX_POOL + 1];
        int m = 0;
        for (int j = 0; j < size; j++) if (j != ia && j != ib) keep[m++] = pool[j];
        keep[m++] = c;
        memcpy(pool, keep, m * sizeof(long long));
        size = m;
    }
    return size == 1 && pool[0] == target;
}

static char *fz_dup_exact(const void *p, size_t n) {    // exact-size heap copy (ASan bounds)
    char *q = (char *)malloc(n ? n : 1);
    if (n) memcpy(q, p, n); else q[0] = 0;
    return q;
}

static void fz_verify_one(const int *nums, int n, int target, const char *comp, int clen) {
    char *c = fz_dup_exact(comp, clen);
    float r = countdown_verify(nums, n, target, c, clen);
    int ref = fz_ref_verify(nums, n, target, c, clen);
    FZ_ASSERT(r == 0.0f || r == 1.0f, "verify: returned %g", r);
    FZ_ASSERT((r == 1.0f) == ref, "verify: countdown_verify %g, reference %d (n=%d target=%d len=%d)", r, ref, n, target, clen);
    int wf = clen > 0 ? countdown_well_formed(c, clen) : 0;
    FZ_ASSERT(wf == (clen > 0 && fz_ref_well_formed(c, clen)), "verify: countdown_well_formed %d, reference disagrees (len %d)", wf, clen);
    if (r == 1.0f) {
        FZ_ASSERT(wf, "verify: a correct completion is not well formed");
        for (int l = 0; l < clen; l++)
            FZ_ASSERT(countdown_verify(nums, n, target, c, l) == 0.0f, "verify: proper prefix of length %d is also correct", l);
        char *ext = (char *)malloc(clen + 1);
        memcpy(ext, c, clen);
        for (int b = 0; b < 256; b += 7) {
            ext[clen] = (char)b;
            FZ_ASSERT(countdown_verify(nums, n, target, ext, clen + 1) == 0.0f, "verify: extension by byte %d is also correct", b);
        }
        free(ext);
        if (clen < 1000) {
            int toks[1001], ok = 1;
            for (int i = 0; i < clen; i++) { toks[i] = char_to_token((unsigned char)c[i]); ok &= toks[i] >= 0; }
            toks[clen] = TOK_EOS;
            if (ok) FZ_ASSERT(countdown_reward(nums, n, target, toks, clen + 1, 0.0f) == 1.0f, "verify: countdown_reward disagrees");
        }
    }
    free(c);
}

static void fz_run_verify(const char *path, const uint8_t *data, size_t size) {
    (void)path;
    if (size >= 2 && data[0] == 0xFF) {                    // binary mode
        int n = data[1] % 20, nums[20], target;
        size_t off = 2;
        if (size < off + 4 * (size_t)(n + 1)) return;
        for (int i = 0; i < n; i++) { int32_t v; memcpy(&v, data + off, 4); nums[i] = v; off += 4; }
        int32_t t; memcpy(&t, data + off, 4); target = t; off += 4;
        fz_verify_one(nums, n, target, (const char *)data + off, (int)(size - off));
        return;
    }
    if (size > 100000) return;
    const uint8_t *tab = (const uint8_t *)memchr(data, '\t', size);
    int plen = tab ? (int)(tab - data) : (int)size, clen = tab ? (int)(size - plen - 1) : 0;
    char *p = fz_dup_exact(data, plen);
    int nums[COUNTDOWN_MAX_POOL], n = -1, target = -1;
    long long rnums[COUNTDOWN_MAX_POOL], rtarget;
    int rn;
    for (int maxn = MAX_NUMS; maxn <= COUNTDOWN_MAX_POOL; maxn += COUNTDOWN_MAX_POOL - MAX_NUMS) {
        int rc = countdown_parse_prompt(p, plen, nums, maxn, &n, &target);
        int ref = fz_ref_parse_prompt(p, plen, maxn, rnums, &rn, &rtarget);
        FZ_ASSERT((rc == 0) == ref, "verify: countdown_parse_prompt %d, reference %d (len %d, max %d)", rc, ref, plen, maxn);
        if (rc == 0) {
            char back[256];
            int m = 0;
            FZ_ASSERT(n == rn && target == rtarget, "verify: prompt parsed differently from the reference");
            for (int i = 0; i < n; i++) {
                FZ_ASSERT(nums[i] == rnums[i], "verify: number %d differs from the reference", i);
                m += snprintf(back + m, sizeof back - m, i ? " %d" : "%d", nums[i]);
            }
            m += snprintf(back + m, sizeof back - m, ">%d:", target);
            FZ_ASSERT(m == plen && !memcmp(back, p, plen), "verify: accepted prompt does not print back to itself");
        }
    }
    free(p);
    if (n < 1) { static const int def[3] = {7, 3, 5}; n = 3; memcpy(nums, def, sizeof def); target = 26; }
    fz_verify_one(nums, n, target, tab ? (const char *)tab + 1 : "", clen);
}

#endif
