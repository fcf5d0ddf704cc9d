/*
tests/fuzz/replay_driver.c: a stand-alone driver for replay.c, the way tests/test_grpo.c
includes it (grpo.c with TESTING, a check() helper, then replay.c).
  bin/replay_driver                      replays tests/fuzz/regressions/ (run from the repo root)
  bin/replay_driver DIR HARNESS          replays every file of DIR through HARNESS
                                          (dataset, check, checkpoint, verify), e.g. a corpus
Exit status: 0 when every file passed.
*/
#define TESTING
#ifndef FZ_GRPO_SRC
#define FZ_GRPO_SRC "../../grpo.c"
#endif
#include FZ_GRPO_SRC
#include <stdarg.h>

static int tests_passed = 0, tests_failed = 0;
static int quiet_pass = 0;

static void check(int ok, const char *name, const char *fmt, ...) {
    if (ok) tests_passed++; else tests_failed++;
    if (ok && quiet_pass) return;
    printf("%s  %-58s ", ok ? "PASS" : "FAIL", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

#include "replay.c"

int main(int argc, char **argv) {
    if (argc == 3) { quiet_pass = getenv("FZ_SHOW_PASS") == NULL; fz_replay_dir(argv[1], argv[2]); }
    else if (argc == 1) test_fuzz_regressions();
    else { fprintf(stderr, "usage: %s [DIR HARNESS]\n", argv[0]); return 2; }
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed != 0;
}
