"""The tiny task of notebook 05: reverse a sequence of letters ("c a b e d" -> "d e b a c </s>").

Decoding and exact match are in helpers.decoding (``greedy_decode``, ``exact_matches``).
Notebook 05's training run, saving its model at step 500 and its final averaged model (the
files notebook 08 loads), is ``train_reversal_checkpoints``:

    python -m helpers.tasks.reversal --save helpers/tasks/checkpoints

Vocabulary of 13 tokens shared by source and target: padding 0, <s> 1, </s> 2, and the letters
a–j as 3..12, so "c a b e d" is 5 3 4 7 6. Padding sits at the end of each sequence.
"""

import argparse
import pathlib

import torch

from helpers import seed_all
from helpers.model import Transformer
from helpers.recipe import adam_with_warmup, average_weights, smoothed_loss, train

from helpers.vocabulary import BOS, EOS, PAD  # noqa: F401  (the ids every task shares)

CHECKPOINTS = pathlib.Path(__file__).resolve().parent / "checkpoints"
PARTLY_TRAINED = "reversal_step500.pt"
TRAINED = "reversal_step1500_averaged.pt"
TINY = {"d": 64, "h": 4, "d_ff": 256, "n_layers": 2}          # notebook 05's tiny model
LETTERS = "abcdefghij"
ITOS = ["<pad>", "<s>", "</s>", *LETTERS]          # id -> token
STOI = {token: i for i, token in enumerate(ITOS)}   # token -> id
VOCAB = len(ITOS)                                   # 13


def encode_letters(text):
    """"c a b e d" or "cabed" -> tensor (1, 5) of ids [[5, 3, 4, 7, 6]]."""
    return torch.tensor([[STOI[c] for c in text.replace(" ", "")]])


def decode_ids(ids):
    """A list or 1-d tensor of ids -> "d e b a c </s>"."""
    return " ".join(ITOS[int(i)] for i in ids)


def batch(n, generator, min_len=3, max_len=8, repeats=False, one_length=False):
    """n random letter sequences of min_len..max_len letters and their reversals.

    Within a sequence the letters are all different (like "c a b e d"), unless repeats=True.
    With one_length=True all n sequences get the same random length, so the batch has no
    padding: the paper batches sentences "by approximate sequence length" (§5.1) for the same
    reason, not to spend computation on padding.

    Returns (src, tgt_in, tgt_out), padded at the end to the longest sequence in the batch:
    src (n, L) the letters; tgt_in (n, L + 1) = <s> + reversed letters (the decoder input,
    shifted right); tgt_out (n, L + 1) = reversed letters + </s> (what each position must write).
    """
    if one_length:
        min_len = max_len = int(torch.randint(min_len, max_len + 1, (1,), generator=generator))
    lengths = torch.randint(min_len, max_len + 1, (n, 1), generator=generator)
    if repeats:
        letters = torch.randint(3, VOCAB, (n, max_len), generator=generator)
    else:                                                         # a random order of a–j per row
        letters = torch.rand(n, len(LETTERS), generator=generator).argsort(dim=1)[:, :max_len] + 3
    pos = torch.arange(max_len)
    real = pos < lengths                                          # (n, max_len): not padding
    src = letters.masked_fill(~real, PAD)
    backwards = (lengths - 1 - pos).clamp(min=0)                  # position i reads letter L-1-i
    reversed_ = letters.gather(1, backwards).masked_fill(~real, PAD)
    tgt_in = torch.cat([torch.full((n, 1), BOS), reversed_], dim=1)
    tgt_out = torch.cat([reversed_, torch.full((n, 1), PAD)], dim=1).scatter(1, lengths, EOS)
    longest = int(lengths.max())
    return src[:, :longest], tgt_in[:, : longest + 1], tgt_out[:, : longest + 1]


def pad_after_eos(ids):
    """ids (batch, n) with <pad> in place of every token that comes after the row's first </s>.

    helpers.decoding.greedy_decode lets a finished row keep writing until every row has written
    </s>; what it writes there is never read (exact_matches ignores it). This makes a finished row
    end cleanly.
    """
    eos = (ids == EOS).long()
    after = (eos.cumsum(dim=1) - eos) > 0                          # a </s> came strictly before
    return ids.masked_fill(after, PAD)


# --- the shipped checkpoints: notebook 05's run ------------------------------------------------

def load_tiny(path, vocab=None):
    """A tiny Transformer (notebook 05's size) with the state dict saved at path, in eval mode.

    vocab: the vocabulary size (default: the reversal task's 13 tokens)."""

    model = Transformer(vocab=vocab or VOCAB, p=0.1, **TINY)
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()


def train_reversal_checkpoints(folder=CHECKPOINTS, progress=True):
    """Notebook 05's training run, exactly: one thread, seed 0, 1,500 steps of 64 one-length
    sequences, Adam with warmup 400, label smoothing, the average of the last 5 checkpoints.
    Saves the weights after step 500 (PARTLY_TRAINED) and the averaged final model (TRAINED)
    as state dicts in folder. Returns the two state dicts."""

    torch.set_num_threads(1)
    seed_all(0)
    gen = torch.Generator().manual_seed(0)
    model = Transformer(vocab=VOCAB, p=0.1, **TINY)
    opt, sched = adam_with_warmup(model, d_model=TINY["d"], warmup=400)
    kept = {}

    def keep_step_500(m, step):         # called after steps 1, 100, 200, ...: no randomness used
        if step == 500:
            kept["step500"] = {k: v.detach().clone() for k, v in m.state_dict().items()}
        return {}

    history = train(model, opt, sched, smoothed_loss(PAD), steps=1500,
                    next_batch=lambda: batch(64, gen, one_length=True), evaluate=keep_step_500,
                    every=100, keep=5, progress=progress)
    averaged = average_weights(history["checkpoints"])
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(kept["step500"], folder / PARTLY_TRAINED)
    torch.save(averaged, folder / TRAINED)
    return kept["step500"], averaged


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train notebook 05's tiny reversal model and save "
                                     "its step-500 and final averaged state dicts.")
    parser.add_argument("--save", default=str(CHECKPOINTS), metavar="FOLDER",
                        help="where to write the two .pt files (default: helpers/tasks/checkpoints)")
    args = parser.parse_args(argv)
    train_reversal_checkpoints(args.save)
    for name in (PARTLY_TRAINED, TRAINED):
        path = pathlib.Path(args.save) / name
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
