"""notes/trl/tiny.py: a tiny random GPT-2 (or Llama) and a word-level tokenizer, built locally (no
model hub), for the TRL tests and examples. `python3 notes/trl/tiny.py DIR` writes both to DIR.

Vocabulary: <pad>=0, <eos>=1, then the letters a..f. With 8 tokens and a random model whose weights
are drawn with std 0.3 (peaked next-token distributions), about a third of the completion tokens
have |λ| > 1 in groups of 4, and with a budget of 5 tokens about one completion in 8 runs out of
it without <eos> (truncated). reward(): dyadic values (k/4), so float32 group means are
exact and an all-equal group's advantage is exactly 0 in TRL, as in grpo.c."""
import os
import sys

LETTERS = ["a", "b", "c", "d", "e", "f"]


def build(out_dir, seed=0, dropout=0.0, arch="gpt2"):
    """arch "gpt2": dropout in GPT-2's nn.Dropout modules (resid/embd/attn_pdrop); "llama": dropout is
    Llama's attention_dropout, applied inside the attention call (no nn.Dropout module)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                              PreTrainedTokenizerFast)

    vocab = {"<pad>": 0, "<eos>": 1}
    for i, c in enumerate(LETTERS):
        vocab[c] = i + 2
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   bos_token="<eos>", unk_token="<pad>")
    fast.padding_side = "left"
    torch.manual_seed(seed)
    ids = dict(vocab_size=len(vocab), initializer_range=0.3, bos_token_id=1, eos_token_id=1, pad_token_id=0)
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=64, attention_dropout=dropout, **ids))
    else:
        model = GPT2LMHeadModel(GPT2Config(n_positions=64, n_embd=32, n_layer=2, n_head=2,
                                           resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout, **ids))
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir


def prompts(n=64, seed=0):
    """Prompts of 2-4 letters (a datasets.Dataset with a 'prompt' column)."""
    import random
    from datasets import Dataset
    rng = random.Random(seed)
    rows = [" ".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 4))) for _ in range(n)]
    return Dataset.from_dict({"prompt": rows})


def reward(completions, **kwargs):
    """(number of 'a' and 'b' in the completion, capped at 4) / 4: dyadic, so exact in float32."""
    return [min(4, sum(w in ("a", "b") for w in c.split())) / 4.0 for c in completions]



def reward_tenths(completions, prompts=None, **kwargs):
    """Not dyadic, so float32 group means round: 0.3 for every completion of a prompt starting with a, b or c
    (an all-equal group), else 0.3 + 0.1 × (number of 'a' and 'b', capped at 4)."""
    return [0.3 if p.split()[0] in ("a", "b", "c") else 0.3 + 0.1 * min(4, sum(w in "ab" for w in c.split()))
            for p, c in zip(prompts, completions)]


def reward_constant(completions, **kwargs):
    """0.3 for every completion: every group all-equal, check's advantages all exactly 0."""
    return [0.3] * len(completions)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 notes/trl/tiny.py OUT_DIR")
    print(build(sys.argv[1]))
