"""The ticket classifier: equal to the same model built from PyTorch's modules, blind to
padding when masked, blind to order without positions; the bag-of-words baseline; training."""

import pytest
import torch
from torch import nn

from helpers.tasks.classifier import (BagOfWords, TicketClassifier, accuracy, batches_of_similar_length,
                                mean_of_real_tokens, predict, train, trim)
from helpers.tasks.tickets import PAD


def moved(model):
    """Move every parameter off its initial value (LayerNorm γ ≠ 1, biases ≠ 0)."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def short_and_padded():
    short = torch.tensor([[5, 9, 3, 7]])
    long = torch.tensor([[4, 8, 2, 6, 5, 9, 3, 7, 8, 2]])
    batch = torch.full((2, 10), PAD)
    batch[0, :4], batch[1] = short[0], long[0]
    return short, batch


def test_equals_the_model_built_from_pytorch_modules():
    torch.manual_seed(0)
    model = moved(TicketClassifier(20))
    layer = nn.TransformerEncoderLayer(64, 4, 128, 0.1, batch_first=True, norm_first=True)
    ref = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    ref.load_state_dict({k.replace("blocks.", "layers."): v
                         for k, v in model.state_dict().items() if k.startswith("blocks.")})
    _, ids = short_and_padded()
    with torch.no_grad():
        h = model.embed(ids) + model.position(torch.arange(ids.shape[1]))
        h = model.norm(ref(h, src_key_padding_mask=ids == PAD))
        keep = (ids != PAD).unsqueeze(-1).float()
        expected = model.out((h * keep).sum(1) / keep.sum(1))
        assert torch.allclose(model(ids), expected, atol=1e-5)


def test_position_table_is_120_by_64():
    model = TicketClassifier(20)
    assert tuple(model.position.weight.shape) == (120, 64)
    assert model.position.weight.numel() == 7680


def test_padding_mask_makes_a_ticket_in_a_batch_score_as_alone():
    torch.manual_seed(0)
    model = moved(TicketClassifier(20))
    short, batch = short_and_padded()
    with torch.no_grad():
        alone = model(short)[0]
        assert torch.allclose(model(batch)[0], alone, atol=1e-5)
        unmasked = model(batch, key_mask=None)[0]
        assert not torch.allclose(unmasked, alone, atol=1e-3)


def test_without_positions_a_shuffled_ticket_gets_the_same_scores():
    torch.manual_seed(0)
    model = moved(TicketClassifier(20))
    ids = torch.tensor([[4, 8, 2, 6, 5, 9, 3, 7]])
    shuffled = ids[:, torch.randperm(8)]
    with torch.no_grad():
        assert not torch.allclose(model(ids), model(shuffled), atol=1e-3)
        model.position.weight.zero_()
        assert torch.allclose(model(ids), model(shuffled), atol=1e-5)


def test_mean_of_real_tokens_skips_padding():
    h = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    ids = torch.tensor([[7, 8, PAD]])
    assert torch.equal(mean_of_real_tokens(h, ids), torch.tensor([[2.0, 3.0]]))


def test_bag_of_words_ignores_order_and_padding():
    torch.manual_seed(0)
    bow = BagOfWords(20).eval()
    short, batch = short_and_padded()
    with torch.no_grad():
        assert torch.allclose(bow(short), bow(short[:, [3, 1, 0, 2]]), atol=1e-6)
        assert torch.allclose(bow(batch)[0], bow(short)[0], atol=1e-6)


def test_trim_drops_only_all_padding_columns():
    _, batch = short_and_padded()
    assert torch.equal(trim(batch[:1]), batch[:1, :4])
    assert torch.equal(trim(batch), batch)


@pytest.fixture
def one_thread():
    """Tiny matrices train faster on one thread (and do not wait for a busy core)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.cpu_sensitive
def test_training_learns_a_toy_rule(one_thread):
    # team = 0 if token 3 comes before token 4, else 1: only order tells them apart
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 20, (512, 6), generator=g)
    first = torch.randint(0, 2, (512,), generator=g)
    ids[:, 1] = torch.where(first == 0, 3, 4)
    ids[:, 4] = torch.where(first == 0, 4, 3)
    model = TicketClassifier(20, n_layers=1)
    history = train(model, ids, first, valid=(ids, first), epochs=3, lr=3e-3)
    assert [row["epoch"] for row in history] == [1, 2, 3]
    assert history[-1]["loss"] < history[0]["loss"]
    assert accuracy(model, ids, first) > 0.95
    bow = BagOfWords(20)
    train(bow, ids, first, epochs=3, lr=3e-3)
    assert accuracy(bow, ids, first) < 0.6                     # the same bag for both teams


def test_batches_of_similar_length_cover_every_row_once_with_less_padding():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 60, (400,), generator=g)
    ids = torch.full((400, 60), PAD)
    for row, n in zip(ids, lengths.tolist(), strict=True):
        row[:n] = 7
    batches = batches_of_similar_length(ids, 16, torch.Generator().manual_seed(1))
    assert sorted(torch.cat(batches).tolist()) == list(range(400))
    assert [len(b) for b in batches].count(16) == 25
    again = batches_of_similar_length(ids, 16, torch.Generator().manual_seed(1))
    assert all(torch.equal(a, b) for a, b in zip(batches, again, strict=True))
    padded = sum(int(lengths[b].max()) * len(b) for b in batches)
    at_random = sum(int(lengths[b].max()) * len(b)
                    for b in torch.randperm(400, generator=torch.Generator().manual_seed(1)).split(16))
    assert padded < 0.7 * at_random


def test_predict_keeps_the_order_of_the_rows():
    torch.manual_seed(0)
    model = moved(TicketClassifier(20))
    _, batch = short_and_padded()
    ids = torch.cat([batch, batch.flip(0)])            # short, long, long, short: run as short, short...
    scores = predict(model, ids, batch_size=2)
    with torch.no_grad():
        one_by_one = torch.cat([model(trim(row[None])) for row in ids])
    assert torch.allclose(scores, one_by_one, atol=1e-5)


def test_start_moves_the_tokens_along_the_position_table():
    torch.manual_seed(0)
    model = moved(TicketClassifier(20))
    ids = torch.tensor([[4, 8, 2, 6]])
    with torch.no_grad():
        assert torch.equal(model(ids, start=0), model(ids))
        h = model.embed(ids) + model.position(torch.arange(5, 9))
        for block in model.blocks:
            h = block(h)
        expected = model.out(model.norm(h).mean(1))
        assert torch.allclose(model(ids, start=5), expected, atol=1e-6)
        assert not torch.allclose(model(ids, start=5), model(ids), atol=1e-3)
        with pytest.raises(IndexError):
            model(ids, start=117)                          # positions 117..120: the table has 120 rows


def test_the_shipped_model_is_notebook_07s_run_and_keeps_the_padding_mask():
    """Notebook 07's mask sections load it (helpers/tasks/checkpoints/ticket_classifier.pt)."""
    from helpers.tasks.classifier import CHECKPOINT, load_classifier
    from helpers.tasks.tickets import Vocab, labels, make_tickets, token_ids
    train_rows, valid_rows = make_tickets(seed=0)
    vocab = Vocab([row["text"] for row in train_rows])
    model = load_classifier(len(vocab))
    assert CHECKPOINT.stat().st_size < 600_000 and not model.training
    assert 0.90 <= accuracy(model, token_ids(valid_rows, vocab), labels(valid_rows)) <= 0.97
    short = next(row for row in valid_rows if row["style"] == "short")
    longest = max(valid_rows, key=lambda row: len(vocab.encode(row["text"])))
    alone, pair = token_ids([short], vocab), token_ids([short, longest], vocab)
    with torch.no_grad():
        assert torch.allclose(model(alone)[0], model(pair)[0], atol=1e-5)
