"""helpers.claims (the in-cell checks of a trained model's numbers) and checks.blocked."""

import json

import pytest
import torch

from helpers import checks, claims
from helpers.checks import Hint, call


def test_expect_prints_value_and_range(capsys, monkeypatch):
    monkeypatch.delenv(claims.RECORD, raising=False)
    assert claims.expect("exact match", 0.75, 0.5, 1.0, "{:.1%}") == 0.75
    printed = "exact match: 75.0% (our training runs, with a margin: 50.0% to 100.0%)\n"
    assert capsys.readouterr().out == printed


def test_expect_raises_outside_its_range(monkeypatch):
    monkeypatch.delenv(claims.RECORD, raising=False)
    with pytest.raises(AssertionError, match="outside the range"):
        claims.expect("loss", 2.0, 0.1, 1.0, show=False)
    with pytest.raises(AssertionError, match="every run"):
        claims.expect_true("the model says warranty", False)
    assert claims.expect_true("it holds", True)


def test_the_sweep_records_instead_of_raising(tmp_path, monkeypatch):
    record = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.RECORD, str(record))
    claims.expect("loss", 2.0, 0.1, 1.0, show=False)
    claims.expect_true("a statement", False)
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["what"], r["held"]) for r in rows] == [("loss", False), ("a statement", False)]


def test_table_prints_every_claim_checked_once_with_its_last_value(capsys, monkeypatch):
    monkeypatch.delenv(claims.RECORD, raising=False)
    monkeypatch.setattr(claims, "CHECKED", {})
    claims.expect("exact match", 0.75, 0.5, 1.0, "{:.1%}", show=False)
    claims.expect_true("it writes d e b a c", True)
    claims.expect("exact match", 0.8, 0.5, 1.0, "{:.1%}", show=False)       # its cell run again
    claims.table()
    assert capsys.readouterr().out.splitlines() == [
        "claim                this run  our training runs, with a margin",
        "exact match             80.0%  50.0% to 100.0%",
        "it writes d e b a c       yes  yes in every run"]


def test_sweep_table_counts_runs_that_held():
    from tests.seed_sweep import table
    row = {"what": "em", "low": 0.5, "high": 1.0, "fmt": "{:.2f}"}
    runs = {("avx2", 0): ([{**row, "value": 0.9, "held": True}], 10.0, None),
            ("default", 0): ([{**row, "value": 0.4, "held": False}], 12.0, None)}
    text, failed = table("05_x", runs)
    assert "| em | 0.50 to 1.00 | 0.40 to 0.90 | 1/2 |" in text and failed
    assert "kernel families avx2, default" in text
    text, failed = table("05_x", {("avx2", 0): runs["avx2", 0]})
    assert "1/1" in text and not failed


def test_blocked_reference_is_named_and_restored():
    loss = torch.nn.CrossEntropyLoss
    ref = [(loss, "forward", "nn.CrossEntropyLoss"),
           (torch.nn.functional, "cross_entropy", "F.cross_entropy")]
    logits, target = torch.randn(3, 5), torch.tensor([0, 1, 2])

    def uses_it(z, t):
        return torch.nn.CrossEntropyLoss()(z, t)

    def own(z, t):
        return -z.log_softmax(-1).gather(1, t[:, None]).mean()

    with pytest.raises(Hint, match="uses_it calls nn.CrossEntropyLoss, the very reference"):
        call(uses_it, "uses_it(z, t)", logits, target, reference=ref, instead="write it.")
    assert torch.allclose(call(own, "own(z, t)", logits, target, reference=ref), loss()(logits, target))
    assert loss.forward.__name__ == "forward" and "forward" in vars(loss)
    assert torch.nn.functional.cross_entropy.__name__ == "cross_entropy"


def test_blocked_catches_names_imported_into_the_learners_namespace():
    namespace = {}
    exec("from torch.nn.functional import cross_entropy\n"
         "def mine(z, t):\n    return cross_entropy(z, t)\n", namespace)
    ref = [(torch.nn.functional, "cross_entropy", "F.cross_entropy")]
    with pytest.raises(Hint, match="F.cross_entropy"):
        call(namespace["mine"], "mine(z, t)", torch.randn(2, 3), torch.tensor([0, 1]), reference=ref)
    assert namespace["cross_entropy"] is torch.nn.functional.cross_entropy


def test_blocked_on_a_module_instance_and_a_broad_except():
    layer = torch.nn.Linear(3, 3)

    def sneaky(x):
        try:
            return layer(x)
        except Exception:
            return x

    with pytest.raises(Hint, match="sneaky calls the layer's own forward"):
        call(sneaky, "sneaky(x)", torch.randn(2, 3),
             reference=[(layer, "forward", "the layer's own forward")])
    assert "forward" not in vars(layer) and layer(torch.zeros(1, 3)).shape == (1, 3)
    assert checks.blocked  # public: checkers use it directly too
