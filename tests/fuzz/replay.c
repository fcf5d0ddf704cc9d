/*
tests/fuzz/replay.c: replays tests/fuzz/regressions/<harness>-<name> through the entry
points of the fuzz harnesses (fz_entry.h) WITHOUT clang or libFuzzer, for the normal test
suite. Include it into a file that has already included grpo.c (with TESTING) and that
defines check(int ok, const char *name, const char *fmt, ...), e.g. in tests/test_grpo.c:
    #include "fuzz/replay.c"
    ...  test_fuzz_regressions();
and run from the repository root. Everything here is static with an fz_ prefix.

Each file runs in a forked child with grpo.c's real exit(): rejecting the input with
exit(1)/exit(2) passes. The case FAILS when the child is killed by a signal (a crash, an
oracle of fz_entry.h aborting, or the FZ_REPLAY_TIMEOUT-second alarm, default 20: a hang),
or when its stderr shows a sanitizer report (make test-asan) or "out of memory": the child
runs under a 2 GiB address-space limit, so a file that makes grpo.c try to allocate absurd
memory fails instead of thrashing (under ASan, where an address-space limit cannot be used,
a malloc hook rejects any single allocation over 2 GiB instead, as libFuzzer's
-malloc_limit_mb=2048 does). The child runs single-threaded (omp_set_num_threads(1)): an
OpenMP thread pool started by the parent does not survive fork(), and a parallel region
with more threads would hang.
*/
#include <glob.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "fz_entry.h"

#ifndef FZ_REGRESSIONS_DIR
#define FZ_REGRESSIONS_DIR "tests/fuzz/regressions"
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FZ_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_UNDER_ASAN 1
#endif
#endif

#ifdef FZ_UNDER_ASAN
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *)) __attribute__((weak));
static void fz_big_malloc_hook(const volatile void *p, size_t size) {
    (void)p;
    if (size > ((size_t)2 << 30)) {
        char msg[128];
        int n = snprintf(msg, sizeof msg, "fz replay: out of memory limit: one allocation of %zu bytes\n", size);
        if (write(2, msg, n) < 0) {}
        _exit(97);
    }
}
static void fz_free_hook(const volatile void *p) { (void)p; }   // the runtime wants both hooks
#endif

typedef void (*FzReplayFn)(const char *path, const uint8_t *data, size_t size);

static FzReplayFn fz_entry_for(const char *harness) {
    if (!strcmp(harness, "dataset")) return fz_run_dataset;
    if (!strcmp(harness, "checkpoint")) return fz_run_checkpoint;
    if (!strcmp(harness, "check")) return fz_run_check;
    if (!strcmp(harness, "verify")) return fz_run_verify;
    return NULL;
}

// harness named by a regression file's name: "<harness>-<short name>"
static const char *fz_harness_of(const char *base) {
    static const char *names[] = {"checkpoint", "check", "dataset", "verify"};
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(base, names[i], n) && base[n] == '-') return names[i];
    }
    return NULL;
}

static uint8_t *fz_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *buf = (uint8_t *)malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { uint8_t *b = (uint8_t *)realloc(buf, cap *= 2); if (!b) { free(buf); buf = NULL; } else buf = b; }
    }
    fclose(f);
    *size = n;
    return buf;
}

/* Runs one file through one harness in a child. Returns 1 if it passed; fills why. */
static int fz_replay_one(const char *path, const char *harness, char *why, size_t whycap) {
    FzReplayFn fn = fz_entry_for(harness);
    if (!fn) { snprintf(why, whycap, "unknown harness '%s'", harness); return 0; }
    int fds[2];
    if (pipe(fds) != 0) { snprintf(why, whycap, "pipe failed"); return 0; }
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { close(fds[0]); close(fds[1]); snprintf(why, whycap, "fork failed"); return 0; }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        if (!freopen("/dev/null", "w", stdout)) _exit(99);
#ifdef _OPENMP
        omp_set_num_threads(1);   // libgomp's thread pool does not survive fork(): a parallel region
#endif                            // with more threads would wait forever for the parent's workers
        const char *t = getenv("FZ_REPLAY_TIMEOUT");
        alarm(t && atoi(t) > 0 ? (unsigned)atoi(t) : 20);
#ifndef FZ_UNDER_ASAN
        struct rlimit rl = {(rlim_t)2 << 30, (rlim_t)2 << 30};
        setrlimit(RLIMIT_AS, &rl);
#else
        if (__sanitizer_install_malloc_and_free_hooks) __sanitizer_install_malloc_and_free_hooks(fz_big_malloc_hook, fz_free_hook);
#endif
        size_t size = 0;
        uint8_t *data = fz_read_file(path, &size);
        if (!data) { fprintf(stderr, "fz replay: cannot read %s\n", path); _exit(98); }
        fn(path, data, size);
        fflush(stdout);
        free(data);
        _exit(0);
    }
    close(fds[1]);
    static char err[1 << 16];
    size_t got = 0;
    ssize_t r;
    char sink[4096];
    while ((r = read(fds[0], got < sizeof err - 1 ? err + got : sink,
                     got < sizeof err - 1 ? sizeof err - 1 - got : sizeof sink)) > 0)
        if (got < sizeof err - 1) got += (size_t)r;
    err[got] = 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    // the first line of stderr that explains a failure, or else the first line
    static const char *markers[] = {"fz oracle:", "fz replay: out of memory limit", "ERROR: AddressSanitizer",
                                    "runtime error:", "out of memory", "AddressSanitizer", "UndefinedBehaviorSanitizer"};
    const char *hit = NULL;
    for (int i = 0; i < 7 && !hit; i++) hit = strstr(err, markers[i]);
    const char *shown = hit ? hit : err;
    int shown_len = (int)strcspn(shown, "\n");
    if (shown_len > 160) shown_len = 160;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(why, whycap, "killed by signal %d (%s)%s%.*s", sig, sig == SIGALRM ? "timeout: a hang" : strsignal(sig),
                 shown_len ? ": " : "", shown_len, shown);
        return 0;
    }
    if (hit && (strncmp(hit, "out of memory", 13) == 0 || strncmp(hit, "fz replay: out of memory", 24) == 0)) {
        snprintf(why, whycap, "exit %d after trying to allocate absurd memory: %.*s", WEXITSTATUS(status), shown_len, shown);
        return 0;
    }
    if (hit) { snprintf(why, whycap, "exit %d with a report: %.*s", WEXITSTATUS(status), shown_len, shown); return 0; }
    snprintf(why, whycap, "exit %d%s%.*s", WEXITSTATUS(status), shown_len ? ", " : "", shown_len, shown);
    return 1;
}

/* Replays every file of dir (all through `harness`, or, when harness is NULL, each
   through the harness its name starts with). Returns the number of failures. */
static int fz_replay_dir(const char *dir, const char *harness) {
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/*", dir);
    glob_t g;
    int failures = 0;
    if (glob(pattern, 0, NULL, &g) != 0) {
        check(1, "fuzz regressions: none", "no files in %s", dir);
        return 0;
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *path = g.gl_pathv[i], *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (!strcmp(base, "README.md") || !strcmp(base, "README")) continue;
        const char *h = harness ? harness : fz_harness_of(base);
        char name[200], why[400];
        snprintf(name, sizeof name, "fuzz replay: %s", base);
        if (!h) { check(0, name, "name does not start with dataset-, check-, checkpoint- or verify-"); failures++; continue; }
        int ok = fz_replay_one(path, h, why, sizeof why);
        check(ok, name, "%s", why);
        failures += !ok;
    }
    globfree(&g);
    return failures;
}

// The test-suite entry: every file in tests/fuzz/regressions/ must be handled without a
// crash, hang, sanitizer report or absurd allocation.
static void test_fuzz_regressions(void) {
    const char *dir = getenv("FZ_REGRESSIONS_DIR");
    fz_replay_dir(dir && *dir ? dir : FZ_REGRESSIONS_DIR, NULL);
}
