/*
tests/fuzz/make_seeds.c: writes small valid checkpoints (the seed corpus of the
checkpoint harness) with grpo.c's own save_checkpoint.
  bin/make_seeds checkpoint DIR   (build.sh builds it)
and the seeds of the verify harness from tests/verifier_cases.h (text mode where the
problem prints as a prompt, binary mode 0xFF n nums target completion otherwise):
  bin/make_seeds verify DIR
*/
#define TESTING
#ifndef FZ_GRPO_SRC
#define FZ_GRPO_SRC "../../grpo.c"
#endif
#include FZ_GRPO_SRC

static char test_last_good[1100];   // (what a save names as the last good checkpoint)

static void seed(const char *dir, const char *name, GPTConfig c, int with_opt, int step) {
    GPT m;
    build_gpt(&m, c, 1, 7);
    for (size_t i = 0; i < m.num_parameters; i++) { m.m_memory[i] = 0.001f * (float)(i % 7); m.v_memory[i] = 1e-6f * (float)(i % 5); }
    TrainState st = {step, {{0}}, 0};
    rng_seed(&st.rng, 42, 1);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    save_checkpoint(path, &m, &st, st.step, test_last_good);
    if (!with_opt) {   // cut after the parameters: h[7] 0, no run record, the CRCs of the moments 0
        FILE *f = fopenCheck(path, "rb");
        int32_t h[CKPT_HEADER_INTS];
        if (fread(h, sizeof h, 1, f) != 1) fail_at(__FILE__, __LINE__, "make_seeds: a short read", path);
        size_t n = (size_t)h[9] + m.num_parameters * sizeof(float);
        unsigned char *rest = (unsigned char *)mallocCheck(n);
        if (fread(rest, 1, n, f) != n) fail_at(__FILE__, __LINE__, "make_seeds: a short read", path);
        fclose(f);
        h[7] = h[8] = h[11] = 0;
        for (int i = CKPT_CRC_VOCAB + 2; i < CKPT_CRC_SECTIONS; i++) h[i] = 0;
        h[CKPT_CRC_HEADER] = (int32_t)crc32_update(0, h, CKPT_CRC_HEADER * sizeof *h);
        f = fopenCheck(path, "wb");
        if (fwrite(h, sizeof h, 1, f) != 1 || fwrite(rest, 1, n, f) != n || fclose(f) != 0)
            fail_at(__FILE__, __LINE__, "make_seeds: a write error", path);
        free(rest);
    }
    free_gpt(&m);
    printf("wrote %s (maxT %d, L %d, NH %d, C %d, optimizer %d)\n", path, c.max_seq_len, c.num_layers, c.num_heads, c.channels, with_opt);
}

#include "../verifier_cases.h"

static void verify_seeds(const char *dir) {
    int nc = (int)(sizeof verify_cases / sizeof verify_cases[0]);
    for (int i = 0; i < nc; i++) {
        const VerifyCase *c = &verify_cases[i];
        int len = c->len < 0 ? (int)strlen(c->text) : c->len, text_ok = c->len < 0 && c->n >= 1 && c->target >= 0 && c->target <= 999999;
        for (int j = 0; j < c->n; j++) text_ok &= c->nums[j] >= 0 && c->nums[j] <= 999999;
        char path[1024];
        snprintf(path, sizeof path, "%s/case_%02d", dir, i);
        FILE *f = fopen(path, "wb");
        if (!f) { perror(path); exit(1); }
        if (text_ok) {
            for (int j = 0; j < c->n; j++) fprintf(f, j ? " %d" : "%d", c->nums[j]);
            fprintf(f, ">%d:\t", c->target);
        } else {
            unsigned char hdr[2] = {0xFF, (unsigned char)c->n};
            fwrite(hdr, 1, 2, f);
            for (int j = 0; j < c->n; j++) { int32_t v = c->nums[j]; fwrite(&v, 4, 1, f); }
            int32_t t = c->target; fwrite(&t, 4, 1, f);
        }
        fwrite(c->text, 1, len, f);
        fclose(f);
    }
    printf("wrote %d verify seeds to %s\n", nc, dir);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s checkpoint|verify DIR\n", argv[0]); return 2; }
    if (!strcmp(argv[1], "verify")) { verify_seeds(argv[2]); return 0; }
    argv++;
    seed(argv[1], "tiny_16_1_1_8.bin", (GPTConfig){16, VOCAB_SIZE, 1, 1, 8}, 0, 0);
    seed(argv[1], "tiny_4_1_2_4_opt.bin", (GPTConfig){4, VOCAB_SIZE, 1, 2, 4}, 1, 3);
    seed(argv[1], "tiny_2_2_1_2.bin", (GPTConfig){2, VOCAB_SIZE, 2, 1, 2}, 0, 0);
    seed(argv[1], "tiny_1_1_1_1_opt.bin", (GPTConfig){1, VOCAB_SIZE, 1, 1, 1}, 1, 0);
    return 0;
}
