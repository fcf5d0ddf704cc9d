/*
tests/test_html.c: the --html page of B(G) (./grpo sample --html, ./grpo check --html), included
by tests/test_grpo.c (group "html"). The page embeds its numbers as one JSON block; a small JSON
reader (enough for that block) takes it apart, and every node's |λ|, R̂, A_λ and net
coefficients are compared with the text the same run printed: sample's tree lines, check's
per-token columns (lambda_size, weight, advantage, step_advantage) and the input's rewards.
Each comparison is also run on a copy with one number planted wrong, which it must reject.
The page's drawing is checked in a real browser by tests/browser_check.sh (make test-browser).
*/

// ---- a JSON reader: null, booleans, numbers, strings (\uXXXX to UTF-8), arrays, objects

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct JVal {
    int type;
    double num;             // J_NUM, J_BOOL (0 or 1)
    char *str;              // J_STR
    int n;                  // J_ARR, J_OBJ: items
    struct JVal *items;     // (n)
    char **keys;            // J_OBJ: (n)
} JVal;

static void jskip(const char **p) {
    while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r') (*p)++;
}

// Appends code point c as UTF-8.
static void jput_utf8(char *out, size_t *k, unsigned c) {
    if (c < 0x80) out[(*k)++] = (char)c;
    else if (c < 0x800) {
        out[(*k)++] = (char)(0xc0 | c >> 6);
        out[(*k)++] = (char)(0x80 | (c & 0x3f));
    } else {
        out[(*k)++] = (char)(0xe0 | c >> 12);
        out[(*k)++] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[(*k)++] = (char)(0x80 | (c & 0x3f));
    }
}

// Parses one value at *p into v; returns 1, or 0 at malformed input (v then partly filled).
static int jparse(const char **p, JVal *v) {
    memset(v, 0, sizeof *v);
    jskip(p);
    const char *s = *p;
    if (!strncmp(s, "null", 4)) { *p += 4; v->type = J_NULL; return 1; }
    if (!strncmp(s, "true", 4)) { *p += 4; v->type = J_BOOL; v->num = 1; return 1; }
    if (!strncmp(s, "false", 5)) { *p += 5; v->type = J_BOOL; return 1; }
    if (*s == '"') {
        const char *q = s + 1;
        size_t cap = 16, k = 0;
        for (const char *e = q; *e && *e != '"'; e++) cap++, e += *e == '\\';
        char *out = (char *)malloc(cap * 3 + 1);
        while (*q && *q != '"') {
            if (*q != '\\') { out[k++] = *q++; continue; }
            q++;
            char c = *q++;
            if (c == 'u') {
                unsigned code = 0;
                for (int d = 0; d < 4; d++, q++) {
                    if (!isxdigit((unsigned char)*q)) { free(out); return 0; }
                    code = code * 16 + (unsigned)(isdigit((unsigned char)*q) ? *q - '0' : (tolower(*q) - 'a' + 10));
                }
                jput_utf8(out, &k, code);
            } else if (c == 'n') out[k++] = '\n';
            else if (c == 't') out[k++] = '\t';
            else if (c == 'r') out[k++] = '\r';
            else if (c == 'b') out[k++] = '\b';
            else if (c == 'f') out[k++] = '\f';
            else if (c == '"' || c == '\\' || c == '/') out[k++] = c;
            else { free(out); return 0; }
        }
        if (*q != '"') { free(out); return 0; }
        out[k] = 0;
        v->type = J_STR;
        v->str = out;
        *p = q + 1;
        return 1;
    }
    if (*s == '[' || *s == '{') {
        int obj = *s == '{';
        char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        int cap = 8;
        v->items = (JVal *)calloc(cap, sizeof(JVal));
        v->keys = obj ? (char **)calloc(cap, sizeof(char *)) : NULL;
        (*p)++;
        jskip(p);
        if (**p == close) { (*p)++; return 1; }
        for (;;) {
            if (v->n == cap) {
                cap *= 2;
                v->items = (JVal *)realloc(v->items, cap * sizeof(JVal));
                if (obj) v->keys = (char **)realloc(v->keys, cap * sizeof(char *));
            }
            if (obj) {
                JVal key;
                jskip(p);
                if (**p != '"' || !jparse(p, &key)) return 0;
                v->keys[v->n] = key.str;
                jskip(p);
                if (**p != ':') { free(key.str); return 0; }
                (*p)++;
            }
            if (!jparse(p, &v->items[v->n])) return 0;
            v->n++;
            jskip(p);
            if (**p == ',') { (*p)++; continue; }
            if (**p == close) { (*p)++; return 1; }
            return 0;
        }
    }
    char *end;
    v->num = strtod(s, &end);
    if (end == s) return 0;
    v->type = J_NUM;
    *p = end;
    return 1;
}

static void jfree(JVal *v) {
    for (int i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

// the member `key` of object v, or NULL
static const JVal *jget(const JVal *v, const char *key) {
    if (!v || v->type != J_OBJ) return NULL;
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) return &v->items[i];
    return NULL;
}

// a number member (NAN when absent, null or not a number)
static double jnum(const JVal *v, const char *key) {
    const JVal *x = jget(v, key);
    return x && (x->type == J_NUM || x->type == J_BOOL) ? x->num : NAN;
}

// ---- the page

/* page_json: the text of the page's one JSON block (malloc'd), or NULL when the page does not
   hold exactly one <script type="application/json" id="bg-data"> ... </script>. */
static char *page_json(const char *html) {
    const char *open = "<script type=\"application/json\" id=\"bg-data\">";
    const char *a = strstr(html, open);
    if (!a || strstr(a + strlen(open), "type=\"application/json\"")) return NULL;
    a += strlen(open);
    const char *b = strstr(a, "</script>");
    if (!b) return NULL;
    char *out = (char *)malloc(b - a + 1);
    memcpy(out, a, b - a);
    out[b - a] = 0;
    return out;
}

/* page_structure: "" when the page is one self-contained HTML document (doctype, one <svg>,
   one data block, then the drawing script, nothing fetched from elsewhere: no src=, <link>,
   @import, url( or an address other than the SVG namespace), else what is wrong. */
static const char *page_structure(const char *html) {
    if (strncmp(html, "<!DOCTYPE html>", 15)) return "no <!DOCTYPE html> at the start";
    const char *svg = strstr(html, "<svg id=\"bg-svg\"");
    if (!svg || strstr(svg + 1, "<svg")) return "not exactly one <svg id=bg-svg>";
    const char *data = strstr(html, "id=\"bg-data\"");
    const char *script = data ? strstr(data, "<script>") : NULL;
    if (!data || !script || !strstr(script, "JSON.parse")) return "no drawing script after the data block";
    if (!strstr(html, "</html>")) return "no </html> at the end";
    static const char *fetches[] = {"src=", "<link", "@import", "url(", "<iframe", "fetch(", "XMLHttpRequest"};
    for (size_t i = 0; i < sizeof fetches / sizeof fetches[0]; i++)
        if (strstr(html, fetches[i])) return fetches[i];
    for (const char *h = strstr(html, "http"); h; h = strstr(h + 1, "http"))
        if (strncmp(h, "http://www.w3.org/2000/svg", 26)) return "an address other than the SVG namespace";
    return "";
}

static char *slurp_file(const char *path) {
    size_t n = 0;
    char *text = (char *)read_all(path, &n);
    if (!text) return NULL;
    char *out = (char *)malloc(n + 1);
    memcpy(out, text, n);
    out[n] = 0;
    free(text);
    return out;
}

// Parses the page's JSON into root; 1 on success.
static int page_parse(const char *json, JVal *root) {
    const char *p = json;
    if (!jparse(&p, root)) return 0;
    jskip(&p);
    return *p == 0 && root->type == J_OBJ && jget(root, "groups");
}

// close enough: |a − b| <= tol (a NAN or null never is)
static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

/* page_vs_sample_text: compares the nodes of the page's only group with sample's text tree
   (the lines after "<prompt>"), in order: the step text, |λ|, R̂ and V̂ (printed with 3
   decimals: within 5e-4), the cost (or "(leaf)" for −1), A_λ and both net coefficients (4
   decimals: within 5e-5) and the member list y(...). Returns the number of nodes that differ
   (or 1000 when the shapes do not match), the first difference in why. */
static int page_vs_sample_text(const JVal *root, const char *text, char *why, size_t cap) {
    why[0] = 0;
    const JVal *groups = jget(root, "groups");
    const JVal *nodes = groups && groups->n == 1 ? jget(&groups->items[0], "nodes") : NULL;
    const char *line = text ? strstr(text, "<prompt>\n") : NULL;
    if (!nodes || !line) {
        snprintf(why, cap, "no nodes in the JSON, or no <prompt> line in the text");
        return 1000;
    }
    line += strlen("<prompt>\n");
    int bad = 0, n = 0;
    for (; *line && n <= nodes->n; n++) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[8192];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        line += len + (nl != NULL);
        const char *lam = strstr(buf, " |λ|=");
        if (!lam) break;   // past the tree
        if (n == nodes->n) { n++; break; }
        const JVal *nd = &nodes->items[n];
        const char *t0 = strstr(buf, "── ");
        t0 = t0 ? t0 + strlen("── ") : buf;
        const char *t1 = lam;
        while (t1 > t0 && t1[-1] == ' ') t1--;
        const JVal *jt = jget(nd, "text");
        size_t jl = jt && jt->str ? strlen(jt->str) : 0;
        while (jl > 0 && jt->str[jl - 1] == ' ') jl--;
        int ok = jt && (size_t)(t1 - t0) == jl && !strncmp(t0, jt->str, jl);
        char *rh = strstr(buf, "R̂="), *vh = strstr(buf, "V̂="), *ah = strstr(buf, "A_λ="), *net = strstr(buf, " net ");
        char *y = strstr(buf, "y(");
        ok = ok && rh && vh && ah && net && y;
        if (ok) {
            ok &= atoi(lam + strlen(" |λ|=")) == jnum(nd, "size");
            ok &= near(atof(rh + strlen("R̂=")), jnum(nd, "R"), 5e-4 + 1e-7);
            ok &= near(atof(vh + strlen("V̂=")), jnum(nd, "V"), 5e-4 + 1e-7);
            const char *cost = strchr(vh, '(');
            double jc = jnum(nd, "cost");
            ok &= cost && (!strncmp(cost, "(leaf)", 6) ? jc == -1 : atol(cost + 1) == (long)jc && jc >= 0);
            ok &= near(atof(ah + strlen("A_λ=")), jnum(nd, "A"), 5e-5 + 1e-7);
            char *end;
            double g = strtod(net + 5, &end), l = strtod(end, NULL);
            const JVal *jn = jget(nd, "net");
            ok &= jn && jn->n == 2 && near(g, jn->items[0].num, 5e-5 + 1e-7) && near(l, jn->items[1].num, 5e-5 + 1e-7);
            const JVal *mem = jget(nd, "members");
            const char *m = y + 2;
            for (int a = 0; ok && mem && a < mem->n; a++) {
                ok &= atoi(m) == mem->items[a].num;
                m = strpbrk(m, ",)");
                ok &= m && *m == (a + 1 < mem->n ? ',' : ')');
                if (m) m++;
            }
            ok &= mem != NULL;
        }
        if (!ok) {
            if (!bad) snprintf(why, cap, "node %d: text line '%.200s'", n, buf);
            bad++;
        }
    }
    if (n != nodes->n) {
        if (!bad) snprintf(why, cap, "%d tree lines in the text, %d nodes in the JSON", n, nodes->n);
        bad += 1000;
    }
    return bad;
}

typedef struct {           // check's columns of one token, by (line, t)
    int lambda_size, seen;
    double weight, advantage, step_advantage;
} CheckRow;
#define HT_LINES 200
#define HT_T 512

/* parse_check_columns: check's output rows into rows[line][t] (lines < HT_LINES, t < HT_T);
   returns the number of rows, −1 when a row does not parse or lies outside. */
static int parse_check_columns(const char *out, CheckRow rows[HT_LINES][HT_T]) {
    memset(rows, 0, sizeof(CheckRow) * HT_LINES * HT_T);
    const char *p = out ? strstr(out, "dloss_dlogp\n") : NULL;
    if (!p) return -1;
    p += strlen("dloss_dlogp\n");
    int count = 0;
    while (*p && strncmp(p, "loss\t", 5)) {
        int line, t, tok, lam;
        long group;
        double w, adv, step;
        if (sscanf(p, "%d\t%ld\t%d\t%d\t%d\t%lf\t%lf\t%lf", &line, &group, &t, &tok, &lam, &w, &adv, &step) != 8 ||
            line < 0 || line >= HT_LINES || t < 0 || t >= HT_T)
            return -1;
        rows[line][t] = (CheckRow){lam, 1, w, adv, step};
        count++;
        p = strchr(p, '\n');
        if (!p) return -1;
        p++;
    }
    return count;
}

/* member_line: the line of completion y(id) of group `group` in a check file (reward[line] set:
   a completion's line; group_of: check_file_rewards): the page names a group's completions
   y1..yk in file order. 0 when there is none. */
static int member_line(const double *reward, const long *group_of, long group, int id) {
    for (int line = 1; line < HT_LINES; line++)
        if (!isnan(reward[line]) && group_of[line] == group && --id == 0) return line;
    return 0;
}

/* page_vs_check_columns: every node of every group of the page against check's columns, run
   with --objective grpo (g) and lambda-grpo (l): for each member (y(id), the id-th line of its
   group in the file: member_line) and each position
   t of the step, lambda_size = |λ| and step_advantage = A_λ (both printed from the same float:
   to 1e-7 relative); at the step's first position Σ_members weight·advantage = the node's net
   coefficient under each objective (1e-6 relative: a sum of rounded printouts); R̂ = the mean
   of the members' rewards (reward[line], read from the input file; 1e-6). Also that the nodes
   own every row of the columns exactly once. Returns the number of differences, the first in
   why. */
static int page_vs_check_columns(const JVal *root, CheckRow g[HT_LINES][HT_T], CheckRow l[HT_LINES][HT_T],
                                 int rows, const double *reward, const long *group_of, char *why,
                                 size_t cap) {
    why[0] = 0;
    const JVal *groups = jget(root, "groups");
    if (!groups || groups->type != J_ARR || rows <= 0) {
        snprintf(why, cap, "no groups in the JSON, or no check rows");
        return 1000;
    }
    int bad = 0, owned = 0;
    for (int gi = 0; gi < groups->n; gi++) {
        const JVal *nodes = jget(&groups->items[gi], "nodes");
        long group = (long)jnum(&groups->items[gi], "group");
        for (int n = 0; nodes && n < nodes->n; n++) {
            const JVal *nd = &nodes->items[n], *mem = jget(nd, "members"), *net = jget(nd, "net");
            int start = (int)jnum(nd, "start"), end = (int)jnum(nd, "end"), size = (int)jnum(nd, "size");
            double A = jnum(nd, "A"), R = jnum(nd, "R"), sum[2] = {0, 0}, rsum = 0;
            int ok = mem && net && net->n == 2 && mem->n == size && start >= 0 && end <= HT_T && start < end;
            for (int a = 0; ok && a < mem->n; a++) {
                int line = member_line(reward, group_of, group, (int)mem->items[a].num);
                ok &= line > 0 && line < HT_LINES;
                for (int t = start; ok && t < end; t++) {
                    const CheckRow *rg = &g[line][t], *rl = &l[line][t];
                    ok &= rg->seen && rl->seen && rg->lambda_size == size && rl->lambda_size == size &&
                          near(rg->step_advantage, A, 1e-7 * fmax(1, fabs(A)));
                    owned += ok;
                }
                if (ok) {
                    sum[0] += g[line][start].weight * g[line][start].advantage;
                    sum[1] += l[line][start].weight * l[line][start].advantage;
                    rsum += reward[line];
                }
            }
            for (int b = 0; ok && b < 2; b++) ok &= near(sum[b], net->items[b].num, 1e-6 * fmax(1, fabs(sum[b])));
            ok = ok && near(rsum / size, R, 1e-6 * fmax(1, fabs(R)));
            if (!ok) {
                if (!bad) snprintf(why, cap, "group %d node %d (tokens %d..%d): |λ| %d, A %g, R̂ %g, net %g %g; columns "
                                   "give net %g %g, R̂ %g", gi, n, start, end - 1, size, A, R,
                                   net && net->n == 2 ? net->items[0].num : NAN,
                                   net && net->n == 2 ? net->items[1].num : NAN, sum[0], sum[1],
                                   size ? rsum / size : NAN);
                bad++;
            }
        }
    }
    if (owned != rows) {
        if (!bad) snprintf(why, cap, "the nodes own %d token rows, check printed %d", owned, rows);
        bad++;
    }
    return bad;
}

/* plant: a copy of json with the first number after `key` (e.g. "\"A\":") replaced by
   another one (itself + 0.25); NULL when the key is not there. */
static char *plant(const char *json, const char *key) {
    const char *at = strstr(json, key);
    if (!at) return NULL;
    at += strlen(key);
    if (*at == '[') at++;
    char *end;
    double v = strtod(at, &end);
    if (end == at) return NULL;
    size_t n = strlen(json);
    char *out = (char *)malloc(n + 64);
    int k = snprintf(out, n + 64, "%.*s%.9g", (int)(at - json), json, v + 0.25);
    strcpy(out + k, end);
    return out;
}

// reward[line] and group_of[line] of a check file (line numbers as check counts them), NAN and 0 elsewhere
static void check_file_rewards(const char *path, double *reward, long *group_of) {
    for (int i = 0; i < HT_LINES; i++) reward[i] = NAN;
    for (int i = 0; i < HT_LINES; i++) group_of[i] = 0;
    char *text = slurp_file(path);
    int line = 1;
    for (char *p = text; p && *p; line++) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        char *r = strstr(p, "reward=");
        char *g = strstr(p, "group=");
        if (r && p[0] != '#' && line < HT_LINES) reward[line] = atof(r + 7);
        if (g && p[0] != '#' && line < HT_LINES) group_of[line] = atol(g + 6);
        p = nl ? nl + 1 : p + strlen(p);
    }
    free(text);
}

/* One check file through ./grpo check --html: the page's structure, its numbers against the
   columns of check --objective grpo and lambda-grpo, a planted wrong A_λ, net coefficient and
   R̂ each rejected, and check's printed rows the same with and without --html. */
static void html_check_file(const char *label, const char *file, const char *opts, const char *page_opts,
                            JVal *keep) {
    static char cmd[2048], out_g[1 << 18], out_l[1 << 18], out_plain[1 << 18];
    char page[512];
    snprintf(page, sizeof page, "%s/%s.html", TMPDIR_, label);
    snprintf(cmd, sizeof cmd, "{ %s check --objective grpo %s %s %s --html %s 2>/dev/null; }", grpo_bin(), opts,
             page_opts, file, page);
    int code = run_binary(cmd, out_g, sizeof out_g);
    snprintf(cmd, sizeof cmd, "%s check --objective lambda-grpo %s %s", grpo_bin(), opts, file);
    int code_l = run_binary(cmd, out_l, sizeof out_l);
    snprintf(cmd, sizeof cmd, "%s check --objective grpo %s %s", grpo_bin(), opts, file);
    run_binary(cmd, out_plain, sizeof out_plain);
    char name[200];
    snprintf(name, sizeof name, "html: check %s: its rows are the same with --html", label);
    check(code == 0 && code_l == 0 && !strcmp(out_g, out_plain), name, "exit %d, %d", code, code_l);
    char *html = slurp_file(page), *json = html ? page_json(html) : NULL;
    const char *shape = html ? page_structure(html) : "no page written";
    snprintf(name, sizeof name, "html: check %s: one self-contained page", label);
    check(json && !shape[0], name, "%s (%zu bytes)", shape[0] ? shape : "doctype, one svg, one data block", html ? strlen(html) : 0);
    static CheckRow rg[HT_LINES][HT_T], rl[HT_LINES][HT_T];
    int rows = parse_check_columns(out_g, rg), rows_l = parse_check_columns(out_l, rl);
    double reward[HT_LINES];
    long group_of[HT_LINES];
    check_file_rewards(file, reward, group_of);
    JVal root;
    memset(&root, 0, sizeof root);
    int parsed = json && page_parse(json, &root);
    char why[600] = "";
    int bad = parsed && rows == rows_l
                  ? page_vs_check_columns(&root, rg, rl, rows, reward, group_of, why, sizeof why) : -1;
    const JVal *groups = jget(&root, "groups");
    snprintf(name, sizeof name, "html: check %s: JSON = check's |λ|, A_λ, net, R̂", label);
    check(bad == 0, name, "%d groups, %d rows, %d differ %s", groups ? groups->n : 0, rows, bad, why);
    // the same comparison must reject one planted wrong number of each kind
    static const char *keys[3] = {"\"A\":", "\"net\":", "\"R\":"};
    int caught = 0;
    for (int q = 0; q < 3 && parsed; q++) {
        char *wrong = plant(json, keys[q]);
        JVal w;
        if (wrong && page_parse(wrong, &w)) {
            caught += page_vs_check_columns(&w, rg, rl, rows, reward, group_of, why, sizeof why) > 0;
            jfree(&w);
        }
        free(wrong);
    }
    snprintf(name, sizeof name, "html: check %s: a planted wrong A_λ, net, R̂ each fails", label);
    check(caught == 3, name, "%d of 3 caught", caught);
    if (keep && parsed) *keep = root;
    else if (parsed) jfree(&root);
    free(json);
    free(html);
}

// the node of group 0 whose step text is `text`, or NULL
static const JVal *page_node(const JVal *root, const char *text) {
    const JVal *groups = jget(root, "groups"), *nodes = groups && groups->n ? jget(&groups->items[0], "nodes") : NULL;
    for (int n = 0; nodes && n < nodes->n; n++) {
        const JVal *t = jget(&nodes->items[n], "text");
        if (t && t->str && !strcmp(t->str, text)) return &nodes->items[n];
    }
    return NULL;
}

/* check --html: the paper's worked example (letters through --token-names; the paper's net
   coefficients on AB, JKL, NQ) and the authors' three-group fixture (logp, ratios, β). */
static void test_html_check(void) {
    JVal we;
    memset(&we, 0, sizeof we);
    html_check_file("worked_example", "notes/examples/worked_example.txt", "--adv-eps 0",
                    "--token-names notes/examples/letters.txt", &we);
    // the paper's numbers (notes/worked-example.md), to its 4 decimals
    static const char *steps[3] = {"AB", "JKL", "NQ"};
    static const double paper[3][2] = {{0.4428, 0.2214}, {-0.6642, -0.2214}, {-2.2140, -1.1070}};
    int ok = 1;
    for (int q = 0; q < 3; q++) {
        const JVal *nd = page_node(&we, steps[q]), *net = jget(nd, "net");
        ok &= net && net->n == 2 && near(net->items[0].num, paper[q][0], 1e-4) && near(net->items[1].num, paper[q][1], 1e-4);
    }
    const JVal *jkl = page_node(&we, "JKL");
    check(ok && jkl && near(jnum(jkl, "R"), 1.0 / 3, 1e-6) && near(jnum(jkl, "A"), -0.2214, 1e-4),
          "html: worked example: AB, JKL, NQ have the paper's net coefficients", "JKL R̂ %.4f A_λ %+.4f",
          jnum(jkl, "R"), jnum(jkl, "A"));
    // the completions are y1..y6 in group order, as the paper names them (not their file lines 3..8)
    const JVal *wg = jget(&we, "groups"), *comps = wg && wg->n ? jget(&wg->items[0], "completions") : NULL;
    int ids_ok = comps && comps->n == 6;
    for (int i = 0; ids_ok && i < comps->n; i++) ids_ok = jnum(&comps->items[i], "id") == i + 1;
    const JVal *ab = jget(page_node(&we, "AB"), "members");
    ids_ok = ids_ok && ab && ab->n == 2 && ab->items[0].num == 1 && ab->items[1].num == 2;
    check(ids_ok, "html: worked example: completions labelled y1..y6 as in the paper (AB's members y1, y2)",
          "%d completions", comps ? comps->n : -1);
    jfree(&we);
    html_check_file("authors_grpo_beta", "tests/fixtures/check/authors_grpo_beta.txt", "--beta 0.04", "", NULL);
    // long steps: four completions of 400 tokens, two pairs sharing 300; a step of more than
    // HTML_STEP_TOKENS tokens is written elided in the middle, its numbers and span unchanged
    char path[400];
    snprintf(path, sizeof path, "%s/html_long.txt", TMPDIR_);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < 4; i++) {
        fprintf(f, "group=5 reward=%d tokens=", i == 1);
        for (int t = 0; t < 400; t++) fprintf(f, "%s%d", t ? "," : "", t < 300 ? 1000 + (i / 2) * 7 + t : i * 1000 + t);
        fprintf(f, "\n");
    }
    if (f) fclose(f);
    JVal lg;
    memset(&lg, 0, sizeof lg);
    html_check_file("long_steps", path, "", "", &lg);
    const JVal *groups = jget(&lg, "groups"), *nodes = groups && groups->n ? jget(&groups->items[0], "nodes") : NULL;
    int elided = 0, ok_span = nodes && nodes->n == 6;
    for (int n = 0; nodes && n < nodes->n; n++) {
        const JVal *t = jget(&nodes->items[n], "text");
        int len = (int)(jnum(&nodes->items[n], "end") - jnum(&nodes->items[n], "start"));
        char marker[64];
        snprintf(marker, sizeof marker, " (%d tokens) ", len - HTML_HEAD_TOKENS - HTML_TAIL_TOKENS);
        elided += t && t->str && len > HTML_STEP_TOKENS && strstr(t->str, marker) && !strstr(t->str, " 1150 ");
        ok_span &= len == 300 || len == 100;
    }
    check(ok_span && elided == 2, "html: a step of 300 tokens is written elided in the middle", "%d of 2 elided", elided);
    jfree(&lg);
}

/* sample's text tree and the page from one group through print_tree and html_group, in process:
   the test's own group of 8 countdown completions with rewards (non-zero advantages and net
   coefficients), V̂ and costs made up per node; then one planted wrong number of each kind. */
static void test_html_sample_text(void) {
    ObjectiveConfig cfg = default_obj();
    GroupBatch g;
    build_group_batch(&g, 1, 8, 16, 0, 0);
    int prompt[10];
    for (int t = 0; t < 10; t++) prompt[t] = t == 0 ? TOK_BOS : char_to_token("7 3 5>26:"[t - 1]);
    fill_group(&g, prompt, 10, GROUP, GROUP_R, &cfg);
    int nn = g.tree.num_nodes;
    NodeNumbers *nums = (NodeNumbers *)malloc(nn * sizeof(NodeNumbers));
    PageGroup pg = {0, "7 3 5>26:", 8, g.comp_row, g.clen, g.reward, g.advantage, 1, &g.tree,
                    g.node_of, g.lambda_size, g.max_new, nums};
    node_numbers(&pg);
    for (int n = 0; n < nn; n++) {   // V̂ and its cost as sample's node_values would fill them in
        int leaf = g.tree.nodes[n].end == g.clen[g.tree.nodes[n].member];
        nums[n].value = leaf ? g.reward[g.tree.nodes[n].member] : 0.125f * (n % 8);
        nums[n].cost = leaf ? -1 : 10 + n;
    }
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    fprintf(mem, "<prompt>\n");
    print_tree(mem, &pg);
    fclose(mem);
    char page[400];
    snprintf(page, sizeof page, "%s/html_text.html", TMPDIR_);
    AtomicFile af;
    FILE *f = html_begin(&af, page, "sample", "7 3 5>26:", OBJ_LAMBDA_GRPO, "test", NULL, 1);
    html_group(f, &pg, NULL, 1);
    html_end(&af);
    char *html = slurp_file(page), *json = html ? page_json(html) : NULL;
    JVal root;
    int parsed = json && page_parse(json, &root);
    char why[600] = "";
    int bad = parsed ? page_vs_sample_text(&root, text, why, sizeof why) : -1;
    int nonzero = 0;
    for (int n = 0; n < nn; n++) nonzero += nums[n].net[0] != 0.0 && nums[n].net[0] != nums[n].net[1];
    check(bad == 0 && nonzero > 0, "html: sample's text tree = the page's JSON (8 completions, rewards 1/0)",
          "%d nodes, %d with GRPO's net != λ-GRPO's, %d differ %s", nn, nonzero, bad, why);
    static const char *keys[5] = {"\"A\":", "\"net\":", "\"R\":", "\"size\":", "\"V\":"};
    int caught = 0;
    for (int q = 0; q < 5 && parsed; q++) {
        char *wrong = plant(json, keys[q]);
        JVal w;
        if (wrong && page_parse(wrong, &w)) {
            caught += page_vs_sample_text(&w, text, why, sizeof why) > 0;
            jfree(&w);
        }
        free(wrong);
    }
    check(caught == 5, "html: sample: a planted wrong A_λ, net, R̂, |λ|, V̂ each fails", "%d of 5 caught", caught);
    // the page's completions: each ends at the node build_prefix_tree gave its last token
    const JVal *groups = jget(&root, "groups"), *comps = parsed ? jget(&groups->items[0], "completions") : NULL;
    int ends_ok = comps && comps->n == 8;
    for (int i = 0; ends_ok && i < 8; i++)
        ends_ok &= (int)jnum(&comps->items[i], "leaf") == g.node_of[(size_t)i * g.max_new + g.clen[i] - 1] &&
                   jnum(&comps->items[i], "accepted") == (g.reward[i] == 1.0f) &&
                   near(jnum(&comps->items[i], "advantage"), g.advantage[i], 1e-7);
    check(ends_ok, "html: each completion ends at its last token's node, with its verdict and a_i", "");
    if (parsed) jfree(&root);
    free(json);
    free(html);
    free(text);
    free(nums);
    free_group_batch(&g);
}

/* ./grpo sample --html end to end (a tiny random model): the page against the text the run
   printed; k = 64 with long completions stays under 1 MB and is drawn from one JSON block. */
static void test_html_sample_runs(void) {
    char model[300], page[400];
    save_tiny_init(model, sizeof model, "html_sample.bin", 31);
    static char cmd[2048], out[1 << 18];
    snprintf(page, sizeof page, "%s/sample16.html", TMPDIR_);
    snprintf(cmd, sizeof cmd, "{ %s sample --threads 1 --model %s --group-size 16 --max-new-tokens 12 --mc-k 2 "
             "--temperature 0.7 --html %s 2>/dev/null; }", grpo_bin(), model, page);
    int code = run_binary(cmd, out, sizeof out);
    char *html = slurp_file(page), *json = html ? page_json(html) : NULL;
    JVal root;
    int parsed = json && page_parse(json, &root);
    char why[600] = "";
    int bad = parsed ? page_vs_sample_text(&root, out, why, sizeof why) : -1;
    const char *shape = html ? page_structure(html) : "no page";
    check(code == 0 && bad == 0 && !shape[0], "html: ./grpo sample --html: the page's JSON = its printed tree",
          "exit %d, %d differ %s %s", code, bad, why, shape);
    if (parsed) jfree(&root);
    free(json);
    free(html);
    snprintf(page, sizeof page, "%s/sample64.html", TMPDIR_);
    snprintf(cmd, sizeof cmd, "{ %s sample --threads 1 --model %s --group-size 64 --max-new-tokens 50 --mc-k 1 "
             "--temperature 1 --html %s 2>/dev/null; }", grpo_bin(), model, page);
    code = run_binary(cmd, out, sizeof out);
    html = slurp_file(page);
    json = html ? page_json(html) : NULL;
    parsed = json && page_parse(json, &root);
    bad = parsed ? page_vs_sample_text(&root, out, why, sizeof why) : -1;
    size_t bytes = html ? strlen(html) : 0;
    const JVal *groups = parsed ? jget(&root, "groups") : NULL, *nodes = groups ? jget(&groups->items[0], "nodes") : NULL;
    check(code == 0 && bad == 0 && bytes > 0 && bytes < 1000000,
          "html: sample k=64, 50 new tokens: the page is under 1 MB, its JSON = the text",
          "exit %d, %zu bytes, %d nodes, %d differ %s", code, bytes, nodes ? nodes->n : 0, bad, why);
    if (parsed) jfree(&root);
    free(json);
    free(html);
    // no temporary file is left next to the pages
    DIR *dir = opendir(TMPDIR_);
    int leftovers = 0;
    for (struct dirent *e; dir && (e = readdir(dir));) leftovers += strstr(e->d_name, ".html.tmp") != NULL;
    if (dir) closedir(dir);
    check(leftovers == 0, "html: the page is written through a temporary file, none left", "%d left", leftovers);
}

/* Bad --html and --token-names: a missing directory, a directory, the input file itself,
   --token-names without --html or unreadable; each exits non-zero naming the option, and
   leaves no page (nor an earlier page's replacement) behind. */
static void test_html_errors(void) {
    static char cmd[1400], out[16384];
    char page[400];
    struct stat sb;
    snprintf(cmd, sizeof cmd, "%s check --html /nonexistent_dir_grpo/x.html notes/examples/worked_example.txt",
             grpo_bin());
    int code = run_binary(cmd, out, sizeof out);
    check(code == 1 && strstr(out, "error: --html /nonexistent_dir_grpo/x.html: cannot write there") &&
          !strstr(out, "line\tgroup"), "html: --html in a missing directory: exit 1 naming --html, before any output",
          "exit %d: %s", code, line_with(out, "--html"));
    snprintf(cmd, sizeof cmd, "%s check --html %s notes/examples/worked_example.txt", grpo_bin(), TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 2 && strstr(out, "it is a directory"), "html: --html naming a directory: refused, exit 2", "exit %d: %s", code,
          line_with(out, "--html"));
    snprintf(cmd, sizeof cmd, "%s check --html notes/examples/worked_example.txt notes/examples/worked_example.txt",
             grpo_bin());
    code = run_binary(cmd, out, sizeof out);
    check(code == 2 && strstr(out, "that is the FILE file"), "html: --html naming the input file: refused, exit 2",
          "exit %d: %s", code, line_with(out, "--html"));
    snprintf(cmd, sizeof cmd, "%s check --token-names notes/examples/letters.txt notes/examples/worked_example.txt",
             grpo_bin());
    code = run_binary(cmd, out, sizeof out);
    check(code == 2 && strstr(out, "--token-names notes/examples/letters.txt names tokens on the --html page only"),
          "html: --token-names without --html: refused, exit 2", "exit %d: %s", code, line_with(out, "token-names"));
    snprintf(page, sizeof page, "%s/never.html", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s check --html %s --token-names /nonexistent_grpo_names.txt "
             "notes/examples/worked_example.txt", grpo_bin(), page);
    code = run_binary(cmd, out, sizeof out);
    check(code == 1 && strstr(out, "error: --token-names /nonexistent_grpo_names.txt: cannot open") &&
          stat(page, &sb) != 0, "html: an unreadable --token-names file: exit 1 naming it, no page", "exit %d: %s", code,
          line_with(out, "token-names"));
    char model[300];
    save_tiny_init(model, sizeof model, "html_err.bin", 32);
    snprintf(cmd, sizeof cmd, "%s sample --threads 1 --model %s --html /nonexistent_dir_grpo/s.html", grpo_bin(), model);
    code = run_binary(cmd, out, sizeof out);
    check(code == 1 && strstr(out, "error: --html /nonexistent_dir_grpo/s.html") && !strstr(out, "y(1)"),
          "html: sample --html in a missing directory: exit 1 before sampling", "exit %d: %s", code,
          line_with(out, "--html"));
}
