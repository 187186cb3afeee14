"""Notebook 06's checkers never fail on their own code, whatever they are given.

Each checker gets perturbed answers (counts off by random amounts, wrong types, tensors of every
shape and dtype from tests/fuzz.py, NaN, functions that raise or return odd things, configurations
with random or absurd sizes); it must print one line that is not "Could not check this answer (...)".
"""

import random

import pytest
import torch

from helpers import counting
from helpers.checks.counting import (GERMAN, check_cache_or_weights, check_changed_choices,
                                     check_german_model, check_gpu_share, check_modern_count,
                                     check_my_config, check_width_factor, gpu_share, modern_count)
from helpers.checks.counting import Q4 as SHARE_QUESTION
from tests.fuzz import assert_survives, wrong_tensors

ODD = [None, ..., "63082496", "", True, -1, 0, 1e300, float("nan"), float("inf"), [1], (1, 2), {"a": 1},
       torch.tensor([]), torch.tensor(1 + 2j), counting.count, object()]
DEEP = dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=8)


def near(right, seed, count=25):
    """Counts a learner might give: off by random amounts, small and large, and some scalings."""
    rng = random.Random(seed)
    out = [right + rng.choice([-1, 1]) * rng.randint(1, 10 ** rng.randint(0, 8)) for _ in range(count)]
    return out + [right, -right, right / 1e6, round(right, -6), right * 2, right + 0.5]


@pytest.mark.parametrize("total", near(GERMAN, 0) + [v for _, v in wrong_tensors(torch.tensor(GERMAN))] + ODD)
def test_german_check_survives(total, capsys):
    assert_survives(capsys, check_german_model, total, GERMAN - 65_000_000)
    assert_survives(capsys, check_german_model, GERMAN, total)


def random_config(rng):
    """A configuration dict with random, sometimes absurd, sizes and keys."""
    if rng.random() < 0.3:
        config = dict(model="gpt2", vocab=rng.randint(1, 5_000), context=rng.randint(1, 4096),
                      d_model=rng.choice([8, 64, 96, 256]), h=rng.choice([1, 2, 3, 4, 8]),
                      N=rng.randint(1, 4))
        if rng.random() < 0.3:
            config["d_ff"] = rng.randint(1, 4096)
    else:
        config = dict(vocab=rng.randint(1, 5_000), d_model=rng.choice([8, 64, 96, 256]),
                      h=rng.choice([1, 2, 3, 4, 8]), d_ff=rng.randint(1, 4096), N=rng.randint(1, 4))
    mutation = rng.random()
    key = rng.choice(sorted(k for k in config if k != "model"))
    if mutation < 0.1:
        del config[key]
    elif mutation < 0.2:
        config[key] = rng.choice(["512", 1.5, -3, 0, None, True, 10 ** 12, float("nan"), [512]])
    elif mutation < 0.25:
        config["dropout"] = 0.1
    elif mutation < 0.3:
        config["model"] = rng.choice(["bert", 3, None])
    return config


def test_config_check_survives_random_configs(capsys):
    rng = random.Random(0)
    for _ in range(25):
        config = random_config(rng)
        try:
            right = (counting.gpt2_params(**{k: v for k, v in config.items() if k != "model"})
                     if config.get("model") == "gpt2" else counting.transformer_params(**config))
        except Exception:
            right = 1_000_000
        for count in (right, right + rng.randint(-10_000, 10_000), rng.choice(ODD), right / 1e6):
            assert_survives(capsys, check_my_config, config, count)


@pytest.mark.parametrize("count", near(counting.transformer_params(**DEEP), 1)
                         + [v for _, v in wrong_tensors(torch.tensor(77_795_328))] + ODD)
def test_config_check_survives_wrong_counts(count, capsys):
    assert_survives(capsys, check_my_config, DEEP, count)


@pytest.mark.parametrize("config", ODD + [{}, {"vocab": 1}, dict(DEEP, h=0), dict(DEEP, N=10 ** 9),
                                          {1: 2}, dict(DEEP, model="gpt2")])
def test_config_check_survives_odd_configs(config, capsys):
    assert_survives(capsys, check_my_config, config, 1)


def returning(value):
    return lambda config: value


def test_modern_count_survives_wrong_functions(capsys):
    right = modern_count(counting.SMOLLM2_360M_CONFIG)
    values = near(right, 2, count=8) + [v for _, v in wrong_tensors(torch.tensor(float(right)))] + ODD
    for value in values:
        assert_survives(capsys, check_modern_count, returning(value))

    def raises(config):
        raise KeyError("head_dim")

    def mutates(config):
        config.clear()
        return right

    def off_by_config(config):          # right for none, off by an amount that depends on the config
        return right + len(config) * config.get("hidden_size", 1)

    for fn in (raises, mutates, off_by_config, lambda config: config, lambda config: [right],
               lambda config: {"count": right}, lambda config: torch.tensor([right, right])):
        assert_survives(capsys, check_modern_count, fn)


@pytest.mark.parametrize("check", [check_changed_choices, check_cache_or_weights])
@pytest.mark.parametrize("value", ODD + ["cache", " Weights ", "post-norm, relu", {"tied"}, ["relu", 3],
                                         {"post-norm", "sinusoidal", "relu", "kv per head"}, set()])
def test_choice_questions_survive_anything(check, value, capsys):
    assert_survives(capsys, check, value)


@pytest.mark.parametrize("check, right", [(check_width_factor, 4.0),
                                          (check_gpu_share, gpu_share(**SHARE_QUESTION))])
def test_number_questions_survive_anything(check, right, capsys):
    values = [right * (1 + e) for e in (-1, -0.5, -0.03, -1e-3, 0, 1e-3, 0.03, 0.5, 1, 9, 99, 3599)]
    for value in values + [v for _, v in wrong_tensors(torch.tensor(right))] + ODD:
        assert_survives(capsys, check, value)
