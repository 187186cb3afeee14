"""The ticket classifier, an encoder-only model that routes support tickets to a team, and a
bag-of-words baseline that cannot see word order.

TicketClassifier: token embedding + a learned position table (120 × 64), pre-norm encoder
blocks (padding hidden by a key mask), a final LayerNorm, the mean over the real tokens
(padding excluded) and a linear layer to the five teams. Unlike the course's
``helpers.model.Transformer``: its own vocabulary, d_ff = 2·d_model, learned positions,
pre-norm, and no ×√d_model on the embedding (both tables start with the same spread).

The course ships notebook 07's run with SEED = 0 (``CHECKPOINT``, loaded by ``load_classifier``), so
that the notebook's mask sections test the same trained weights whether or not the learner ran the
optional training: ``python -m helpers.tasks.classifier --save-model`` trains and writes it again.
"""

import argparse
import pathlib

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from helpers import seed_all
from helpers.attention import additive_mask, padding_mask
from helpers.layers import EncoderLayer
from helpers.tasks.tickets import MAX_TOKENS, PAD, TEAMS, Vocab, labels, make_tickets, token_ids

CHECKPOINT = pathlib.Path(__file__).resolve().parent / "checkpoints" / "ticket_classifier.pt"


def mean_of_real_tokens(h, ids):
    """(batch, n, d) -> (batch, d): the average over the positions that are not padding."""
    keep = (ids != PAD).unsqueeze(-1).float()
    return (h * keep).sum(1) / keep.sum(1)


class TicketClassifier(nn.Module):
    """ids (batch, n) -> team scores (batch, 5)."""

    def __init__(self, vocab, d_model=64, h=4, d_ff=128, n_layers=2, max_len=MAX_TOKENS, p_drop=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)               # one vector per token
        self.position = nn.Embedding(max_len, d_model)          # one learned vector per position
        self.blocks = nn.ModuleList(
            EncoderLayer(d_model, h, d_ff, p_drop, norm_first=True) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)                       # pre-norm blocks need a final norm
        self.out = nn.Linear(d_model, len(TEAMS))

    def forward(self, ids, key_mask="padding", start=0):
        """key_mask: (batch, n) boolean, True where a token is hidden from every query;
        "padding" (the default) hides ids == PAD, None hides nothing.
        start: the position of the first token (0 for a ticket; another value moves the same
        tokens along the position table, as if something came before them)."""
        if isinstance(key_mask, str):
            key_mask = padding_mask(ids, PAD)
        mask = None if key_mask is None else additive_mask(padding=key_mask)
        h = self.embed(ids) + self.position(torch.arange(start, start + ids.shape[1]))
        for block in self.blocks:
            h = block(h, mask)
        return self.out(mean_of_real_tokens(self.norm(h), ids))


class BagOfWords(nn.Module):
    """Order-blind baseline: the mean of the word vectors of a ticket, then a small MLP."""

    def __init__(self, vocab, d=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.hidden = nn.Linear(d, d)
        self.out = nn.Linear(d, len(TEAMS))

    def forward(self, ids):
        return self.out(F.relu(self.hidden(mean_of_real_tokens(self.embed(ids), ids))))


def trim(ids):
    """Drop the columns that are padding in every row (padding sits at the end)."""
    return ids[:, : int((ids != PAD).sum(1).max())]


def batches_of_similar_length(ids, batch_size, generator, pool=50):
    """One epoch's batches of row numbers: shuffle the rows, sort each pool of `pool` batches by
    length, cut it into batches and shuffle the batches. Each batch holds tickets of similar
    length, so trim() drops most of the padding, and every epoch still sees new batches in a
    new order."""
    lengths = (ids != PAD).sum(1)
    batches = []
    for group in torch.randperm(len(ids), generator=generator).split(batch_size * pool):
        batches += group[lengths[group].argsort(stable=True)].split(batch_size)
    return [batches[i] for i in torch.randperm(len(batches), generator=generator)]


@torch.no_grad()
def predict(model, ids, batch_size=256):
    """Team scores for every row of ids, in evaluation mode (no dropout). The rows are run
    sorted by length (less padding to trim), and the scores come back in the order of ids."""
    model.eval()
    order = (ids != PAD).sum(1).argsort(stable=True)
    scores = torch.cat([model(trim(ids[rows])) for rows in order.split(batch_size)])
    return scores[order.argsort()]


def accuracy(model, ids, y):
    """Fraction of tickets whose highest score is the right team."""
    return (predict(model, ids).argmax(1) == y).float().mean().item()


def train(model, ids, y, valid=None, epochs=8, batch_size=16, lr=2e-3, seed=0, desc="training"):
    """Adam on the cross-entropy, in batches of tickets of similar length, with one progress bar
    that shows the current loss. Returns one dict per epoch (mean training loss, and validation
    accuracy when valid = (ids, y) is given)."""
    order_rng = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps = (len(ids) + batch_size - 1) // batch_size
    history = []
    with tqdm(total=epochs * steps, desc=desc, mininterval=1.0) as bar:
        for epoch in range(1, epochs + 1):
            model.train()
            total = 0.0
            for batch in batches_of_similar_length(ids, batch_size, order_rng):
                loss = F.cross_entropy(model(trim(ids[batch])), y[batch])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item()
                bar.set_postfix(epoch=epoch, loss=f"{loss.item():.3f}", refresh=False)
                bar.update(1)
            row = {"epoch": epoch, "loss": total / steps}
            if valid is not None:
                row["valid_accuracy"] = accuracy(model, *valid)
            history.append(row)
    return history


# --- the shipped model: notebook 07's run with SEED = 0 ----------------------------------------

def train_shipped(path=CHECKPOINT, seed=0):
    """Notebook 07's training run, exactly (its tickets, one thread, seed_all(seed), 8 epochs), saved
    as a state dict at path. Returns train's history (with the validation accuracy of each epoch)."""
    torch.set_num_threads(1)
    train_rows, valid_rows = make_tickets(seed=0)
    vocab = Vocab([row["text"] for row in train_rows])
    seed_all(seed)
    model = TicketClassifier(len(vocab))
    history = train(model, token_ids(train_rows, vocab), labels(train_rows),
                    valid=(token_ids(valid_rows, vocab), labels(valid_rows)), epochs=8, seed=seed)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return history


def load_classifier(vocab, path=CHECKPOINT):
    """The shipped ticket classifier (vocab: the vocabulary size, 894), in evaluation mode."""
    model = TicketClassifier(vocab)
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train notebook 07's ticket classifier (SEED = 0) and "
                                     "save it: the model the notebook's mask sections load.")
    parser.add_argument("--save-model", metavar="FILE", nargs="?", const=str(CHECKPOINT),
                        help=f"where to write it (default: {CHECKPOINT.relative_to(CHECKPOINT.parents[3])})")
    args = parser.parse_args(argv)
    if args.save_model is None:
        parser.error("nothing to do: pass --save-model")
    history = train_shipped(args.save_model)
    path = pathlib.Path(args.save_model)
    print(f"validation accuracy after epoch 8: {history[-1]['valid_accuracy']:.3f}; "
          f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
