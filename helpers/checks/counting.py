"""Checks for notebook 06 (parameter count)."""

import torch

from helpers import counting
from helpers.checks import Hint, checker, number

PAPER_BASE = 65_000_000            # Table 3 of the paper, rounded


def _whole(x, name, expected):
    """x as an int, or raise Hint (a count in millions, a fraction)."""
    value = number(x, name)
    if 0 < value < 100_000 and abs(value * 1e6 - expected) < 1e6:
        raise Hint(f"give {name} as the exact number of parameters (like 63_082_496), not in millions.")
    if not value.is_integer():
        raise Hint(f"{name} should be a whole number of parameters, got {value}.")
    return int(value)


# The German model: base layers, a 32,000-token English embedding and a 32,000-token German
# embedding that is also the output layer.
_LAYERS = 6 * (counting.encoder_layer_params(512, 2048) + counting.decoder_layer_params(512, 2048))
_MATRIX = 32_000 * 512
GERMAN = _LAYERS + 2 * _MATRIX


@checker
def check_german_model(total=None, gap=None):
    """total: the German model's parameter count; gap: total minus the paper's 65 million."""
    total = _whole(total, "german_total", GERMAN)
    enc = 6 * counting.encoder_layer_params(512, 2048)
    dec = 6 * counting.decoder_layer_params(512, 2048)
    mistakes = {
        _LAYERS + 3 * _MATRIX: "you counted three matrices: the German embedding and the output "
                               "layer share one, so there are two (English, German).",
        _LAYERS + _MATRIX: "you counted one shared matrix: the English and German vocabularies "
                           "differ, so each language needs its own 32,000 × 512 matrix.",
        2 * _MATRIX: "you counted only the embeddings: add the 6 encoder and 6 decoder layers, "
                     "which do not change.",
        3 * _MATRIX: "you forgot the layers, and the output layer shares the German matrix.",
        _MATRIX: "you forgot the layers and one of the two embedding matrices.",
        _LAYERS: "you counted only the layers: add the embedding matrices.",
        _LAYERS + 2 * 37_000 * 512: "you used the 37,000-token vocabulary: here each language "
                                    "has its own vocabulary of 32,000 tokens.",
        _LAYERS + 37_000 * 512: "that is the paper's base model: redo it with two vocabularies of "
                                "32,000 tokens.",
        GERMAN - 18 * 4 * 512: "you left out the attention biases (4 × 512 per attention, "
                               "18 attentions): the step-7 code counts them.",
        enc + 2 * _MATRIX: "you counted only the encoder layers: add the 6 decoder layers.",
        dec + 2 * _MATRIX: "you counted only the decoder layers: add the 6 encoder layers.",
        GERMAN - 6 * counting.attention_params(512): "each decoder layer has two attentions "
                                                     "(masked self-attention and cross-attention).",
    }
    if total in mistakes:
        return mistakes[total]
    if abs(total - (GERMAN - PAPER_BASE)) < 1e6:
        return "that looks like the gap: german_total is the whole count, the gap goes second."
    if total != GERMAN:
        return ("not the German model's count: the layers are the base model's, plus one "
                "32,000 × 512 matrix per language (the output layer reuses the German one).")
    gap = number(gap, "gap_to_65m")
    if abs(gap - (GERMAN - PAPER_BASE)) <= 500_000:
        return None
    if abs(gap + (GERMAN - PAPER_BASE)) <= 500_000:
        return "mind the sign: the German model is bigger than 65 million, so the gap is positive."
    if abs(gap - (GERMAN - counting.transformer_params(**counting.BASE))) <= 500_000:
        return "that is the gap to our count of the base model: compare with the paper's 65 million."
    if 5 < gap < 20:
        return "give the gap in parameters (like 1_000_000), not in millions."
    return "gap_to_65m should be german_total − 65,000,000."


NEEDS = {"transformer": ("vocab", "d_model", "h", "d_ff", "N"),
         "gpt2": ("vocab", "context", "d_model", "h", "N")}
LIMITS = dict(vocab=1_000_000, context=1_000_000, d_model=16_384, h=512, d_ff=65_536, N=128)


def _read_config(config):
    """(kind, sizes) from the learner's dict, or raise Hint."""
    example = "dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=12)"
    if config is None or config is Ellipsis:
        raise Hint(f"Not answered yet: set my_config to a dict such as {example}.")
    if not isinstance(config, dict):
        raise Hint(f"my_config should be a dict such as {example}, got {type(config).__name__}.")
    kind = config.get("model", "transformer")
    if kind not in NEEDS:
        raise Hint('my_config["model"] should be "transformer" (the 2017 model, the default) or "gpt2".')
    names = NEEDS[kind] + (("d_ff",) if kind == "gpt2" and "d_ff" in config else ())
    missing = [k for k in NEEDS[kind] if k not in config]
    if missing:
        raise Hint(f"my_config lacks {', '.join(missing)}: a {kind} needs {', '.join(NEEDS[kind])}.")
    unknown = [str(k)[:20] for k in config if k not in names and k != "model"]
    if unknown:
        raise Hint(f"my_config has keys this check does not use: {', '.join(unknown)}.")
    sizes = {}
    for k in names:
        v = config[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer():
            raise Hint(f"{k} should be a whole number, got {repr(v)[:30]}.")
        if not 1 <= v <= LIMITS[k]:
            raise Hint(f"{k} = {v:,.0f} is outside what this check builds (1 to {LIMITS[k]:,}): "
                       "pick a smaller variant.")
        sizes[k] = int(v)
    if sizes["d_model"] % sizes["h"]:
        raise Hint("d_model must be a multiple of h: each head gets d_k = d_model / h columns.")
    return kind, sizes


def _build(kind, s):
    from helpers.gpt2 import GPT2
    from helpers.model import Transformer

    if kind == "transformer":
        return Transformer(s["vocab"], s["d_model"], s["h"], s["d_ff"], s["N"])
    return GPT2(s["vocab"], s["context"], s["d_model"], s["h"], s["N"], s.get("d_ff"))


def _instance_count(kind, sizes):
    """Count a model built from the config: for real when small, else on the meta device
    (tensors with shapes and no storage: no memory, no time spent on random numbers)."""
    if _formula(kind, sizes) <= 20_000_000:
        return counting.count(_build(kind, sizes))
    try:
        with torch.device("meta"):
            return counting.count(_build(kind, sizes))
    except Exception:      # should the meta device fail one day, fall back on the formula
        return _formula(kind, sizes)


def _formula(kind, s):
    if kind == "transformer":
        return counting.transformer_params(**s)
    return counting.gpt2_params(**s)


@checker
def check_my_config(config=None, count=None):
    """config: a dict of sizes (a 2017 model, or model="gpt2"); count: its parameter count."""
    kind, s = _read_config(config)
    number(count, "my_count")
    d, vocab, N = s["d_model"], s["vocab"], s["N"]
    if kind == "transformer" and (vocab, d, s["d_ff"], N) == (37_000, 512, 2048, 6):
        return ("this has the base model's sizes (h changes no count), counted above: "
                "change the width (d_model, d_ff) or the depth N.")
    if kind == "gpt2" and (vocab, s["context"], d, s.get("d_ff", 4 * d), N) == (50_257, 1024, 768, 3072, 12):
        return "GPT-2 small is counted above: choose another size (e.g. GPT-2 medium) or a variant."
    actual = _instance_count(kind, s)
    count = _whole(count, "my_count", actual)
    if count == actual:
        return None
    diff = count - actual
    if kind == "transformer":
        enc, dec = counting.encoder_layer_params(d, s["d_ff"]), counting.decoder_layer_params(d, s["d_ff"])
        mistakes = {
            vocab * d: "you added a separate output matrix: the model ties it to the shared embedding.",
            -vocab * d: "you left out the shared embedding (vocab × d_model).",
            -N * (enc + dec): "you left out the layers: N encoder and N decoder layers.",
            -N * dec: "you counted only the encoder: add the N decoder layers.",
            -N * enc: "you counted only the decoder: add the N encoder layers.",
            N * (enc + dec): "you counted the layers twice: N is the number of layers in each stack.",
            -N * counting.attention_params(d): "each decoder layer has two attentions "
                                               "(masked self-attention and cross-attention).",
            -3 * N * 4 * d: "you left out the attention biases (4 · d_model per attention).",
            -5 * N * 2 * d: "you left out the LayerNorms (2 · d_model each, 2 per encoder and "
                            "3 per decoder layer).",
        }
    else:
        block = counting.encoder_layer_params(d, s.get("d_ff", 4 * d))
        mistakes = {
            vocab * d: "you added a separate output matrix: GPT-2 reuses the token embedding.",
            -vocab * d: "you left out the token embedding (vocab × d_model).",
            -s["context"] * d: "you left out the position embedding (context × d_model).",
            -2 * d: "you left out the final LayerNorm (2 · d_model).",
            -N * block: "you left out the blocks.",
            -N * 4 * d: "you left out the attention biases (4 · d_model per block).",
            -N * 2 * 2 * d: "you left out the two LayerNorms of each block.",
        }
    if diff in mistakes:
        return mistakes[diff]
    return (f"the model built from my_config has {'fewer' if diff > 0 else 'more'} parameters than "
            "my_count: recount piece by piece (attention 4d² + 4d, FFN 2·d·d_ff + d_ff + d, 2d per "
            "LayerNorm, the embeddings).")
