"""Issue 29's mistakes in notebook 08's checks (helpers.checks.decoding), each written here the way a
learner would write it, independently of the checker's own code for that mistake."""

import math

import torch

from helpers.checks.decoding import HYPOTHESES, check_beam_step, check_penalised_scores
from printed import printed


def scores_with(alpha=0.6):
    return [sum(math.log(p) for p in ps) / ((5 + len(ps)) / 6) ** alpha for ps in HYPOTHESES.values()]


def test_issue_29_alpha_1_is_named(capsys):
    line = printed(capsys, check_penalised_scores, scores_with(1.0), 1)
    assert "α = 1" in line, line
    assert printed(capsys, check_penalised_scores, scores_with(), 1).startswith("Check passed.")
    no_penalty = printed(capsys, check_penalised_scores, scores_with(0.0), 1)
    assert "α = 1" not in no_penalty and "without the length penalty" in no_penalty, no_penalty


def test_issue_29_every_right_hypothesis_is_counted(capsys):
    right = scores_with()
    line = printed(capsys, check_penalised_scores, [right[0], right[1], -5.0], 1)
    assert "Hypotheses 1 and 2 are right, not 3" in line, line
    line = printed(capsys, check_penalised_scores, [right[0], -5.0, -6.0], 1)
    assert "Hypothesis 1 is right, not 2 and 3" in line, line


def beam_step_written(log_p, lengths, finished, next_log_probs, alpha, copy_finished=False,
                      extend_finished=False):
    """One beam step with torch.where and topk; PAD = 0 is the token a finished beam stays under."""
    batch, k, vocab = next_log_probs.shape
    extended = log_p[..., None] + next_log_probs
    stay = torch.full_like(extended, float("-inf"))
    stay[..., 0] = log_p
    if copy_finished:
        stay = log_p[..., None].repeat(1, 1, vocab)
    if extend_finished:
        stay = extended
    candidates = torch.where(finished[..., None], stay, extended)
    new_length = torch.where(finished & ~torch.tensor(extend_finished), lengths, lengths + 1).float()
    scores = candidates / ((5 + new_length[..., None]) / 6) ** alpha
    best = scores.reshape(batch, -1).topk(k, dim=1).indices
    return best // vocab, best % vocab, candidates.reshape(batch, -1).gather(1, best)


def test_issue_29_a_finished_beam_copied_to_every_token_is_named(capsys):
    assert printed(capsys, check_beam_step, beam_step_written).startswith("Check passed.")
    line = printed(capsys, check_beam_step, lambda *a: beam_step_written(*a, copy_finished=True))
    assert "copied under every token" in line, line
    line = printed(capsys, check_beam_step, lambda *a: beam_step_written(*a, extend_finished=True))
    assert "copied" not in line and "still extended" in line, line
