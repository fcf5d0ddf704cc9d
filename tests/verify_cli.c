/* verify_cli FILE -- score countdown completions with tests/verifier_snippet.c.
 *
 * Reads FILE ('-' = stdin) line by line. Each line is `prompt<TAB>completion`
 * (split at the first TAB; a line without TAB has an empty completion). Only
 * the final '\n' is stripped: every other byte, including '\r' and NUL, belongs
 * to the completion. Lines starting with '#' are skipped (no output); every
 * other line prints exactly one reward with printf("%g\n"), i.e. "1" or "0".
 * A prompt that does not parse scores 0 and is reported on stderr.
 * `./grpo verify FILE` is meant to behave identically.
 *
 * Build: gcc -std=c99 -O2 -Wall -Wextra tests/verify_cli.c -o tests/verify_cli
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verifier_snippet.c"

int main(int argc, char **argv)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    long lineno = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE   (lines: prompt<TAB>completion)\n", argv[0]);
        return 2;
    }
    f = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    while ((got = getline(&line, &cap, f)) != -1) {
        int len = (int)got, plen, nums[COUNTDOWN_MAX_POOL], n, target;
        const char *tab;
        float r = 0.0f;
        lineno++;
        if (len > 0 && line[len - 1] == '\n') len--;
        if (len > 0 && line[0] == '#') continue;
        tab = memchr(line, '\t', (size_t)len);
        plen = tab ? (int)(tab - line) : len;
        if (countdown_parse_prompt(line, plen, nums, COUNTDOWN_MAX_POOL, &n, &target) == 0) {
            r = countdown_verify(nums, n, target, line + plen + (tab ? 1 : 0), len - plen - (tab ? 1 : 0));
        } else {
            fprintf(stderr, "%s:%ld: malformed prompt, scored 0\n", argv[1], lineno);
        }
        printf("%g\n", r);
    }
    free(line);
    if (f != stdin) fclose(f);
    return 0;
}
