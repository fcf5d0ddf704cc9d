"""notes/trl/tiny.py: a tiny random GPT-2 and a word-level tokenizer, built locally (no model hub),
for the TRL tests and examples. `python3 notes/trl/tiny.py DIR` writes both to DIR.

Vocabulary: <pad>=0, <eos>=1, then the letters a..f. With 8 tokens and a random model whose weights
are drawn with std 0.3 (peaked next-token distributions), about a third of the completion tokens
have |λ| > 1 in groups of 4, and with a budget of 5 tokens about one completion in 8 runs out of
it without <eos> (truncated). reward(): dyadic values (k/4), so float32 group means are
exact and an all-equal group's advantage is exactly 0 in TRL, as in grpo.c."""
import os
import sys

LETTERS = ["a", "b", "c", "d", "e", "f"]


def build(out_dir, seed=0, dropout=0.0):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

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
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=2, n_head=2, initializer_range=0.3,
                     resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
                     bos_token_id=1, eos_token_id=1, pad_token_id=0)
    model = GPT2LMHeadModel(cfg)
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 notes/trl/tiny.py OUT_DIR")
    print(build(sys.argv[1]))
