/*
tests/ref_model.h: the PyTorch reference of the model (tests/ref_model.bin, written by
tests/gen_reference.py: float64 autograd on a small GPT-2 with grpo.c's layout), read into a
GPT. Included after grpo.c by tests/test_grpo.c (the CPU model) and tests/test_cuda.cu (the
GPU model: built while cuda_enabled = 1). The file holds a header (magic 20261129, version 2,
the config, batch B x T, the number of AdamW steps), hyper-parameters (temperature, AdamW),
the initial parameters, a batch (inputs, targets, loss mask), and PyTorch's results: logits,
log-probs at the temperature, the masked SFT loss, every parameter gradient, the gradient of
a weighted log-prob sum, the losses of the AdamW steps and the parameters after them; then
(version 2) a critic on the initial trunk: a value head, its values V on the batch, and the
gradients of a weighted sum of V with respect to the trunk's parameters and to the head.
*/

// fread of n items that stops the tests at a short read (a truncated reference file)
#define freadCheck(ptr, size, n, f, what) \
    do { \
        if (fread(ptr, size, n, f) != (size_t)(n)) fail_at(__FILE__, __LINE__, "reference: short read of " what, NULL); \
    } while (0)

// params (host, num_parameters floats) into m, on whichever side m lives
static void reference_set_params(GPT *m, const float *params) {
#ifdef GRPO_CUDA
    if (m->on_device) { cuda_memcpy_h2d(m->params_memory, params, m->num_parameters * sizeof(float)); return; }
#endif
    memcpy(m->params_memory, params, m->num_parameters * sizeof(float));
}

typedef struct {
    int32_t h[32];
    float hp[16];
    GPT m;
    int B, T;
    int *inputs, *targets;
    float *mask, *logits, *logp, loss, *grads, *grad_logp, *adam_losses, *final_params, *params0;
    float *value_head, *values, *grad_values, *grad_values_head;   // (C+1), (B·T), (P), (C+1)
} Reference;

static void load_reference(Reference *r, const char *path) {
    FILE *f = fopenCheck(path, "rb");
    freadCheck(r->h, 4, 32, f, "header");
    if (r->h[0] != 20261129 || r->h[1] != 2) { fprintf(stderr, "%s: bad reference header\n", path); exit(1); }
    freadCheck(r->hp, 4, 16, f, "hparams");
    GPTConfig c = {r->h[3], r->h[2], r->h[4], r->h[5], r->h[6]};
    r->B = r->h[7]; r->T = r->h[8];
    build_gpt(&r->m, c, r->B, 0);
    size_t P = r->m.num_parameters, BT = (size_t)r->B * r->T, V = c.vocab_size;
    r->params0 = (float *)mallocCheck(P * 4);
    freadCheck(r->params0, 4, P, f, "params");
    reference_set_params(&r->m, r->params0);
    r->inputs = (int *)mallocCheck(BT * 4); r->targets = (int *)mallocCheck(BT * 4);
    r->mask = (float *)mallocCheck(BT * 4); r->logits = (float *)mallocCheck(BT * V * 4);
    r->logp = (float *)mallocCheck(BT * 4); r->grads = (float *)mallocCheck(P * 4);
    r->grad_logp = (float *)mallocCheck(P * 4); r->adam_losses = (float *)mallocCheck(r->h[9] * 4);
    r->final_params = (float *)mallocCheck(P * 4);
    freadCheck(r->inputs, 4, BT, f, "inputs"); freadCheck(r->targets, 4, BT, f, "targets");
    freadCheck(r->mask, 4, BT, f, "mask"); freadCheck(r->logits, 4, BT * V, f, "logits");
    freadCheck(r->logp, 4, BT, f, "logp"); freadCheck(&r->loss, 4, 1, f, "loss");
    freadCheck(r->grads, 4, P, f, "grads"); freadCheck(r->grad_logp, 4, P, f, "grad_logp");
    freadCheck(r->adam_losses, 4, r->h[9], f, "adam_losses"); freadCheck(r->final_params, 4, P, f, "final_params");
    size_t H = (size_t)c.channels + 1;
    r->value_head = (float *)mallocCheck(H * 4); r->values = (float *)mallocCheck(BT * 4);
    r->grad_values = (float *)mallocCheck(P * 4); r->grad_values_head = (float *)mallocCheck(H * 4);
    freadCheck(r->value_head, 4, H, f, "value_head"); freadCheck(r->values, 4, BT, f, "values");
    freadCheck(r->grad_values, 4, P, f, "grad_values");
    freadCheck(r->grad_values_head, 4, H, f, "grad_values_head");
    fclose(f);
}

// masked SFT loss of the reference batch and its gradient (grads zeroed first); returns loss
static float reference_loss_backward(Reference *r, int backward) {
    int BT = r->B * r->T;
    int *tg = (int *)mallocCheck(BT * 4);
    float *lp = (float *)mallocCheck(BT * 4), *dl = (float *)mallocCheck(BT * 4);
    float count = 0;
    for (int i = 0; i < BT; i++) { tg[i] = r->mask[i] > 0 ? r->targets[i] : -1; count += r->mask[i]; }
    gpt_forward(&r->m, r->inputs, r->B, r->T);
    gpt_logprob_forward(&r->m, lp, tg, BT, 1.0f, NULL);
    double loss = 0;
    for (int i = 0; i < BT; i++) { if (tg[i] >= 0) loss -= lp[i]; dl[i] = tg[i] >= 0 ? -1.0f / count : 0.0f; }
    if (backward) {
        gpt_zero_grad(&r->m);
        gpt_logprob_backward(&r->m, tg, dl, BT, 1.0f);
        gpt_backward(&r->m, r->inputs);
    }
    free(tg); free(lp); free(dl);
    return (float)(loss / count);
}
