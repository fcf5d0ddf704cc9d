/*
tests/fuzz/fz_harness.h: the libFuzzer side of the grpo.c harnesses (clang -fsanitize=fuzzer).
Include this FIRST in a harness, then grpo.c, then fz_entry.h.

grpo.c reports bad input by printing a message and calling exit(1) (exit(2) for usage
errors). For fuzzing that is the expected path, so after the system headers this file
redefines, for the code that follows (grpo.c and fz_entry.h):
  exit(code)            -> longjmp back into fz_fuzz_one (while an input is running)
  malloc/calloc/realloc/free, getline
                        -> the same calls, plus a table of live blocks
  fopen/fclose          -> the same calls, plus a table of open FILEs
  stderr                -> /dev/null (set FZ_VERBOSE=1 to see grpo.c's messages)
After an exit, every block and FILE still live is released, so exits neither leak memory
nor file descriptors (run with -detect_leaks=1 if you like). After a NORMAL return, the
tables must be empty (the entry code frees what grpo.c returned): a leftover block or
FILE is a leak on the success path and aborts with a report (FZ_IGNORE_LEAKS=1 to skip).
The harness input is written to a memfd and passed as /proc/self/fd/N (no disk I/O).
*/
#ifndef FZ_HARNESS_H
#define FZ_HARNESS_H
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <errno.h>
#include <float.h>
#include <stddef.h>
#include <getopt.h>
#include <unistd.h>
#include <setjmp.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/mman.h>

#define TESTING   /* compiles grpo.c's main out */
#define FZ_LIBFUZZER 1

static jmp_buf fz_jmp;
static volatile int fz_active = 0;      // 1 while grpo.c code runs for an input
static volatile int fz_exit_code = 0;
static FILE *fz_err = NULL;             // grpo.c's stderr
static int fz_fd = -1;                  // memfd holding the current input
static char fz_path[64];

__attribute__((noreturn)) static void fz_exit(int code) {
    if (!fz_active) exit(code);
    fz_exit_code = code;
    longjmp(fz_jmp, 1);
}

// ---- live-pointer table (open addressing, linear probing, backward-shift deletion) ----
typedef struct { void *p; int is_file; } FzSlot;
static FzSlot *fz_tab = NULL;
static size_t fz_cap = 0, fz_count = 0;

static size_t fz_hash(void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (size_t)x & (fz_cap - 1);
}
static void fz_insert_raw(void *p, int is_file) {
    size_t i = fz_hash(p);
    while (fz_tab[i].p) { if (fz_tab[i].p == p) { fz_tab[i].is_file = is_file; return; } i = (i + 1) & (fz_cap - 1); }
    fz_tab[i].p = p; fz_tab[i].is_file = is_file; fz_count++;
}
static void fz_track(void *p, int is_file) {
    if (!p) return;
    if ((fz_count + 1) * 2 > fz_cap) {
        FzSlot *old = fz_tab; size_t oc = fz_cap;
        fz_cap = fz_cap ? fz_cap * 2 : 1024;
        fz_tab = (FzSlot *)calloc(fz_cap, sizeof(FzSlot));
        if (!fz_tab) { fprintf(stderr, "fz: out of memory for the table\n"); abort(); }
        fz_count = 0;
        for (size_t i = 0; i < oc; i++) if (old[i].p) fz_insert_raw(old[i].p, old[i].is_file);
        free(old);
    }
    fz_insert_raw(p, is_file);
}
static int fz_untrack(void *p) {
    if (!p || !fz_cap) return 0;
    size_t i = fz_hash(p);
    while (fz_tab[i].p && fz_tab[i].p != p) i = (i + 1) & (fz_cap - 1);
    if (!fz_tab[i].p) return 0;
    fz_tab[i].p = NULL; fz_count--;
    for (size_t j = (i + 1) & (fz_cap - 1); fz_tab[j].p; j = (j + 1) & (fz_cap - 1)) {
        FzSlot s = fz_tab[j];            // re-insert the rest of the cluster
        fz_tab[j].p = NULL; fz_count--;
        fz_insert_raw(s.p, s.is_file);
    }
    return 1;
}
// After exit(): release everything grpo.c still holds. Returns the number released.
static size_t fz_release_all(void) {
    size_t n = 0;
    for (size_t i = 0; i < fz_cap; i++)
        if (fz_tab[i].p) { if (fz_tab[i].is_file) fclose((FILE *)fz_tab[i].p); else free(fz_tab[i].p); fz_tab[i].p = NULL; n++; }
    fz_count = 0;
    return n;
}

static void *fz_malloc(size_t n) { void *p = malloc(n); fz_track(p, 0); return p; }
static void *fz_calloc(size_t a, size_t b) { void *p = calloc(a, b); fz_track(p, 0); return p; }
static void *fz_realloc(void *p, size_t n) {
    int had = fz_untrack(p);
    void *q = realloc(p, n);
    if (q) fz_track(q, 0); else if (had && n) fz_track(p, 0);
    return q;
}
static void fz_free(void *p) { fz_untrack(p); free(p); }
static ssize_t fz_getline(char **line, size_t *cap, FILE *f) {
    fz_untrack(*line);
    ssize_t r = getline(line, cap, f);
    fz_track(*line, 0);
    return r;
}
static FILE *fz_fopen(const char *path, const char *mode) { FILE *f = fopen(path, mode); fz_track(f, 1); return f; }
static int fz_fclose(FILE *f) { fz_untrack(f); return fclose(f); }

// Writes the input to the memfd; fz_path names it.
static void fz_write_input(const uint8_t *data, size_t size) {
    if (fz_fd < 0) {
        fz_fd = memfd_create("fz_input", 0);
        if (fz_fd < 0) { perror("memfd_create"); abort(); }
        snprintf(fz_path, sizeof fz_path, "/proc/self/fd/%d", fz_fd);
    }
    if (ftruncate(fz_fd, 0) != 0) { perror("ftruncate"); abort(); }
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(fz_fd, data + off, size - off, (off_t)off);
        if (w <= 0) { perror("pwrite"); abort(); }
        off += (size_t)w;
    }
}

static FILE *fz_get_real_stderr(void) { return stderr; }
#define fz_real_stderr fz_get_real_stderr()

typedef void (*FzEntry)(const char *path, const uint8_t *data, size_t size);

static void fz_init_io(void) {
    if (!fz_err) {
        const char *v = getenv("FZ_VERBOSE");
        fz_err = (v && *v && *v != '0') ? stderr : fopen("/dev/null", "w");
        if (!freopen("/dev/null", "w", stdout)) abort();   // grpo.c's tables (cmd_check)
    }
}

static int fz_fuzz_one(FzEntry fn, const uint8_t *data, size_t size) {
    fz_init_io();
    fz_write_input(data, size);
    if (setjmp(fz_jmp) == 0) {
        fz_active = 1;
        fn(fz_path, data, size);
        fz_active = 0;
        if (fz_count) {
            const char *ig = getenv("FZ_IGNORE_LEAKS");
            size_t blocks = 0, files = 0;
            for (size_t i = 0; i < fz_cap; i++) if (fz_tab[i].p) { if (fz_tab[i].is_file) files++; else blocks++; }
            if (!(ig && *ig && *ig != '0')) {
                fprintf(stderr, "fz: success path left %zu heap block(s) and %zu FILE(s) open\n", blocks, files);
                abort();
            }
            fz_release_all();
        }
    } else {
        fz_active = 0;
        fz_release_all();
    }
    return 0;
}

// ---- from here on, the code that follows (grpo.c, fz_entry.h) sees the wrappers ----
#define exit(code) fz_exit(code)
#define malloc(n) fz_malloc(n)
#define calloc(a, b) fz_calloc(a, b)
#define realloc(p, n) fz_realloc(p, n)
#define free(p) fz_free(p)
#define getline(l, c, f) fz_getline(l, c, f)
#define fopen(p, m) fz_fopen(p, m)
#define fclose(f) fz_fclose(f)
#undef stderr
#define stderr fz_err

#ifndef FZ_GRPO_SRC
#define FZ_GRPO_SRC "../../grpo.c"
#endif
#endif
