"""Checks for notebook 06 (parameter count)."""

import sys

import torch

from helpers import counting
from helpers.checks import Hint, Passed, call, checker, choice, choices, exercise, number

PAPER_BASE = 65_000_000            # Table 3 of the paper, rounded


def _whole(x, name, expected):
    """x as an int, or raise Hint (a count in millions, a fraction)."""
    value = number(x, name)
    if 0 < value < 100_000 and abs(value * 1e6 - expected) < 0.1 * expected:
        raise Hint(f"give {name} as the exact number of parameters from your formulas (like 63_082_496), "
                   "not in millions.")
    if not value.is_integer():
        raise Hint(f"{name} should be a whole number of parameters, got {value}.")
    return int(value)


def _diagnose(diff, slips):
    """The hint for a count that is off by diff, from (difference, clause) pairs.

    Two slips can remove the same number of parameters (the LayerNorms and the FFN biases when
    d_ff = 4 d_model): then the hint names every slip that fits, not only the first.
    """
    fits = list(dict.fromkeys(clause.rstrip(".") for d, clause in slips if d == diff))
    if not fits:
        return None
    if len(fits) == 1:
        return fits[0] + "."
    return ("this count fits more than one slip: " + "; or ".join(fits)
            + " (each changes the count by the same number here).")


# The German model: base layers, a 32,000-token English embedding and a 32,000-token German
# embedding that is also the output layer.
_LAYERS = 6 * (counting.encoder_layer_params(512, 2048) + counting.decoder_layer_params(512, 2048))
_MATRIX = 32_000 * 512
GERMAN = _LAYERS + 2 * _MATRIX
_GERMAN_ATTENTION_BIASES = 18 * 4 * 512     # 18 attention modules, 4 biases of 512
_GERMAN_FFN_BIASES = 12 * (2048 + 512)      # 12 FFNs, b1 and b2
_GERMAN_NORMS = 30 * 2 * 512                # 2 per encoder layer, 3 per decoder layer


@checker
def check_german_model(total=None, gap=None):
    """total: the German model's parameter count; gap: total minus the paper's 65 million."""
    total = _whole(total, "german_total", GERMAN)
    enc = 6 * counting.encoder_layer_params(512, 2048)
    dec = 6 * counting.decoder_layer_params(512, 2048)
    ffn_or_norms = ("you left out the FFN biases (2,048 + 512 per FFN, 12 FFNs)",
                    "you left out the LayerNorms (2 × 512 each, 2 per encoder and 3 per decoder layer)")
    slips = [
        (_LAYERS + 3 * _MATRIX, "you counted three matrices: the German embedding and the output "
                                "layer share one, so there are two (English, German)."),
        (_LAYERS + _MATRIX, "you counted one shared matrix: the English and German vocabularies "
                            "differ, so each language needs its own 32,000 × 512 matrix."),
        (2 * _MATRIX, "you counted only the embeddings: add the 6 encoder and 6 decoder layers, "
                      "which do not change."),
        (3 * _MATRIX, "you forgot the layers, and the output layer shares the German matrix."),
        (_MATRIX, "you forgot the layers and one of the two embedding matrices."),
        (_LAYERS, "you counted only the layers: add the embedding matrices."),
        (_LAYERS + 2 * 37_000 * 512, "you used the 37,000-token vocabulary: here each language "
                                     "has its own vocabulary of 32,000 tokens."),
        (_LAYERS + 37_000 * 512, "that is the paper's base model: redo it with two vocabularies of "
                                 "32,000 tokens."),
        (GERMAN - _GERMAN_ATTENTION_BIASES, "you left out the attention biases (4 × 512 per "
                                            "attention, 18 attentions): section 1's count includes them."),
        (GERMAN - _GERMAN_FFN_BIASES, ffn_or_norms[0]),
        (GERMAN - _GERMAN_NORMS, ffn_or_norms[1]),
        (GERMAN - _GERMAN_ATTENTION_BIASES - _GERMAN_FFN_BIASES,
         "you left out every bias (attention and FFN): section 1's count includes them"),
        (GERMAN - _GERMAN_ATTENTION_BIASES - _GERMAN_NORMS,
         "you left out the attention biases and the LayerNorms"),
        (enc + 2 * _MATRIX, "you counted only the encoder layers: add the 6 decoder layers."),
        (dec + 2 * _MATRIX, "you counted only the decoder layers: add the 6 encoder layers."),
        (GERMAN - 6 * counting.attention_params(512), "each decoder layer has two attentions "
                                                      "(masked self-attention and cross-attention)."),
    ]
    hint = _diagnose(total, slips)
    if hint:
        return hint
    if abs(total - (GERMAN - PAPER_BASE)) < 1e6:
        return "that looks like the gap: german_total is the whole count, the gap goes second."
    rounded = _rounded_hint(total, GERMAN, "german_total")
    if rounded:
        return rounded
    if total != GERMAN:
        return ("not the German model's count: the layers are the base model's, plus one "
                "32,000 × 512 matrix per language (the output layer reuses the German one).")
    gap = number(gap, "gap_to_65m")
    right = GERMAN - PAPER_BASE
    if abs(gap - right) < 0.5:
        return None
    if abs(gap + right) < 0.5:
        return "mind the sign: the German model is bigger than 65 million, so the gap is positive."
    if abs(gap - (GERMAN - counting.transformer_params(**counting.BASE))) < 0.5:
        return "that is the gap to our count of the base model: compare with the paper's 65 million."
    if 5 < gap < 20:
        return "give the gap in parameters (like 1_000_000), not in millions."
    if abs(gap - right) < 1_000_000:
        return ("close, but not exact: compute gap_to_65m as german_total - 65_000_000 rather than "
                "rounding it (both numbers are exact).")
    return "gap_to_65m should be german_total − 65,000,000."


NEEDS = {"transformer": ("vocab", "d_model", "h", "d_ff", "N"),
         "gpt2": ("vocab", "context", "d_model", "h", "N")}
LIMITS = dict(vocab=1_000_000, context=1_000_000, d_model=16_384, h=512, d_ff=65_536, N=128)

# Configurations whose counts the notebook prints before "your turn 2", and where.
WIDTHS, DEPTHS = (256, 512, 1024, 2048, 4096), (1, 2, 4, 6, 12, 24, 48)
GPT2_FAMILY = {(768, 12): "small", (1024, 24): "medium", (1280, 36): "large", (1600, 48): "XL"}


def _printed_above(kind, s):
    """Where the notebook already prints this configuration's count, or None."""
    if kind == "transformer":
        v, d, d_ff, n = s["vocab"], s["d_model"], s["d_ff"], s["N"]
        if (v, d, d_ff, n) == (37_000, 512, 2048, 6):
            return "as the base model in section 1 (h changes no count)"
        if (v, d, d_ff, n) == (13, 64, 256, 2):
            return "as the tiny model in section 2"
        if v == 37_000 and n == 6 and d in WIDTHS and d_ff == 4 * d:
            return f"in section 3's width table (d_model {d:,})"
        if v == 37_000 and d == 512 and d_ff == 2048 and n in DEPTHS:
            return f"in section 3's depth table (N = {n})"
        return None
    d, n = s["d_model"], s["N"]
    if (s["vocab"], s["context"], s.get("d_ff", 4 * d)) == (50_257, 1024, 4 * d) and (d, n) in GPT2_FAMILY:
        return f"in section 4's GPT-2 family table ({GPT2_FAMILY[d, n]})"
    return None


def _read_config(config):
    """(kind, sizes) from the learner's dict, or raise Hint."""
    example = "dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=8)"
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


def _rounded_hint(count, actual, name):
    """The hint for a count that is a rounded number near the right one, or None.

    A whole number of millions within 10 % is a count like Table 3's (80 million for N = 8),
    rounded by the paper; a multiple of 1,000 within 1 % is the learner's own count, rounded.
    """
    if count % 1_000_000 == 0 and abs(count - actual) <= 0.1 * actual:
        return (f"{name} = {count:,} is rounded to millions, as the paper rounds the counts of Table 3 "
                "(65 million, 80 million for N = 8): give the exact count your formulas compute "
                "(section 1 gives 63,082,496 for the paper's 65 million).")
    if count % 1_000 == 0 and abs(count - actual) <= 0.01 * actual:
        return (f"close, but rounded: give {name} exactly as your formulas compute it, to the last "
                "parameter (like 63_082_496), not rounded to thousands.")
    return None


@checker
def check_my_config(config=None, count=None):
    """config: a dict of sizes (a 2017 model, or model="gpt2"); count: its parameter count."""
    kind, s = _read_config(config)
    number(count, "my_count")
    where = _printed_above(kind, s)
    if where:
        return (f"this configuration's count is printed above, {where}: choose one that is not, "
                "e.g. a row of the paper's Table 3 such as N = 8 or d_ff = 4096.")
    actual = _instance_count(kind, s)
    count = _whole(count, "my_count", actual)
    if count == actual:
        return None
    diff = count - actual
    d, vocab, N = s["d_model"], s["vocab"], s["N"]
    d_ff = s.get("d_ff", 4 * d)
    if kind == "transformer":
        enc, dec = counting.encoder_layer_params(d, d_ff), counting.decoder_layer_params(d, d_ff)
        attention_biases, ffn_biases, norms = 3 * N * 4 * d, 2 * N * (d_ff + d), 5 * N * 2 * d
        slips = [
            (vocab * d, "you added a separate output matrix: the model ties it to the shared embedding."),
            (-vocab * d, "you left out the shared embedding (vocab × d_model)."),
            (-N * (enc + dec), "you left out the layers: N encoder and N decoder layers."),
            (-N * dec, "you counted only the encoder: add the N decoder layers."),
            (-N * enc, "you counted only the decoder: add the N encoder layers."),
            (N * (enc + dec), "you counted the layers twice: N is the number of layers in each stack."),
            (-N * counting.attention_params(d), "each decoder layer has two attentions "
                                                "(masked self-attention and cross-attention)."),
            (-attention_biases, "you left out the attention biases (4 · d_model per attention, "
                                "3 attentions per encoder–decoder pair of layers)"),
            (-ffn_biases, "you left out the FFN biases (d_ff + d_model per FFN, one FFN per layer)"),
            (-norms, "you left out the LayerNorms (2 · d_model each, 2 per encoder and 3 per "
                     "decoder layer)"),
            (-attention_biases - ffn_biases, "you left out every bias (attention and FFN)"),
        ]
    else:
        block = counting.encoder_layer_params(d, d_ff)
        slips = [
            (vocab * d, "you added a separate output matrix: GPT-2 reuses the token embedding."),
            (-vocab * d, "you left out the token embedding (vocab × d_model)."),
            (-s["context"] * d, "you left out the position embedding (context × d_model)."),
            (-2 * d, "you left out the final LayerNorm (2 · d_model)."),
            (-N * block, "you left out the blocks."),
            (-N * 4 * d, "you left out the attention biases (4 · d_model per block)"),
            (-N * 2 * 2 * d, "you left out the two LayerNorms of each block (2 · d_model each)"),
            (-N * 2 * 2 * d - 2 * d, "you left out every LayerNorm (two per block and the final one)"),
            (-N * (d_ff + d), "you left out the FFN biases (d_ff + d_model per block)"),
            (-N * (4 * d + d_ff + d), "you left out every bias (attention and FFN)"),
        ]
    hint = _diagnose(diff, slips)
    if hint:
        return hint
    rounded = _rounded_hint(count, actual, "my_count")
    if rounded:
        return rounded
    return (f"the model built from my_config has {'fewer' if diff > 0 else 'more'} parameters than "
            "my_count: recount piece by piece (attention 4d² + 4d, FFN 2·d·d_ff + d_ff + d, 2d per "
            "LayerNorm, the embeddings).")


# --- Your turn 3: a model of today from its Hugging Face configuration ------------------------

def _config(d, d_ff, h, h_kv, n, vocab, tied, context=8192):
    return {"hidden_size": d, "intermediate_size": d_ff, "num_attention_heads": h,
            "num_key_value_heads": h_kv, "num_hidden_layers": n, "vocab_size": vocab,
            "tie_word_embeddings": tied, "attention_bias": False, "mlp_bias": False,
            "hidden_act": "silu", "rms_norm_eps": 1e-05, "max_position_embeddings": context,
            "rope_theta": 100000.0}


# SmolLM2-360M first (the exercise), then configurations that catch what the first cannot:
# SmolLM2-135M, an untied model with a head size of 32, and plain multi-head attention (h_kv = h).
MODERN_CONFIGS = [
    ("SmolLM2-360M", counting.SMOLLM2_360M_CONFIG),
    ("SmolLM2-135M", counting.SMOLLM2_135M_CONFIG),
    ("an untied model (tie_word_embeddings false, head size 32)",
     _config(256, 704, 8, 2, 4, 1000, False, context=2048)),
    ("a model with as many key-value heads as query heads",
     _config(192, 512, 6, 6, 3, 500, True, context=1024)),
]


_MODERN_COUNTS = {}


def modern_count(config):
    """The checker's count: modules with the config's shapes, built on the meta device and
    counted (equal to helpers.counting.smollm2_params, tested); each configuration built once."""
    key = tuple(sorted(counting.llama_sizes(config).items()))
    if key not in _MODERN_COUNTS:
        with torch.device("meta"):
            _MODERN_COUNTS[key] = counting.count(counting.llama_modules(**counting.llama_sizes(config)))
    return _MODERN_COUNTS[key]


def _modern_slips(config):
    """(hint, difference from the right count) for each typical slip, for this config."""
    s = counting.llama_sizes(config)
    d, h, h_kv, d_ff, n, vocab = s["d_model"], s["h"], s["h_kv"], s["d_ff"], s["N"], s["vocab"]
    d_k = d // h
    layer = 2 * d * h * d_k + 2 * d * h_kv * d_k + 3 * d * d_ff + 2 * d
    if s["tied"]:
        slips = [("you counted the output layer as a second matrix: tie_word_embeddings is true, "
                  "so it is the embedding itself and counts once", vocab * d)]
    else:
        slips = [("tie_word_embeddings is false in this config: the output layer has its own "
                  "vocab_size × hidden_size matrix, count it", -vocab * d)]
    slips += [
        ("you gave W_K and W_V all the query heads: with grouped-query attention they map "
         "hidden_size to num_key_value_heads × head_dim (head_dim = hidden_size / "
         "num_attention_heads)", n * 2 * d * (h - h_kv) * d_k),
        ("you counted two FFN matrices: SwiGLU has three (gate_proj, up_proj, down_proj), "
         "3 × hidden_size × intermediate_size", -n * d * d_ff),
        ("you counted GPT-2's FFN, two matrices of hidden_size × 4 · hidden_size: SwiGLU has three of "
         "hidden_size × intermediate_size (SmolLM2's intermediate_size is 8/3 · hidden_size, which "
         "makes the two counts equal there, not in this config)", n * (8 * d * d - 3 * d * d_ff)),
        ("you gave RMSNorm a bias β: it has a gain γ only, hidden_size numbers per norm",
         (2 * n + 1) * d),
        ("you gave the layers' RMSNorms a bias β: RMSNorm has a gain γ only", 2 * n * d),
        ("you forgot the final RMSNorm after the last layer (hidden_size numbers)", -d),
        ("you left out the RMSNorms: two per layer (before attention, before the MLP) and a final "
         "one, hidden_size numbers each", -(2 * n + 1) * d),
        ("you counted one RMSNorm per layer: there are two (before attention and before the MLP)",
         -n * d),
        ("you added attention biases: attention_bias is false, the projections have none",
         n * (h * d_k + 2 * h_kv * d_k + d)),
        ("you added FFN biases: mlp_bias is false, the three matrices have none",
         n * (2 * d_ff + d)),
        ("you added a position table: rotary positions are computed, they have no parameters",
         config["max_position_embeddings"] * d),
        ("you forgot W_O (o_proj, num_attention_heads × head_dim → hidden_size) in each layer",
         -n * h * d_k * d),
        ("you left out the embedding (vocab_size × hidden_size)", -vocab * d),
        ("you counted one layer: multiply it by num_hidden_layers", -(n - 1) * layer),
    ]
    if d_k != 64:
        head_64 = ("you wrote the head size as 64: compute head_dim = hidden_size // "
                   "num_attention_heads (it is 64 in SmolLM2 only)")
        slips.append((head_64, n * 2 * d * h_kv * (64 - d_k)))                 # in W_K and W_V
        slips.append((head_64, n * 2 * d * (h + h_kv) * (64 - d_k)))           # in all four
    return [(hint, diff) for hint, diff in slips if diff]


def _modern_hint(diff, config):
    """Name the slip (or two) whose difference equals diff, or None."""
    slips = _modern_slips(config)
    for hint, d in slips:
        if d == diff:
            return hint + "."
    for i, (a, da) in enumerate(slips):
        for b, db in slips[i + 1:]:
            if da + db == diff:
                return f"two slips: {a}; and {b}."
    return None


def _as_count(x, expected):
    """The learner's returned count as an int, or raise Hint."""
    value = number(x, "my_modern_count(config)")
    if 0 < value < 100_000 and abs(value * 1e6 - expected) < 2e6:
        raise Hint("my_modern_count should return the exact number of parameters, not millions.")
    if not value.is_integer():
        raise Hint(f"my_modern_count should return a whole number of parameters, got {value}.")
    return int(value)


# What check_modern_count compares with: a function that calls one of these counts nothing itself.
REFERENCES = [(counting, "smollm2_params", "helpers.counting.smollm2_params"),
              (counting, "llama_modules", "helpers.counting.llama_modules"),
              (sys.modules[__name__], "modern_count", "helpers.checks.counting.modern_count")]


@checker
def check_modern_count(fn=None):
    """The learner's my_modern_count(config) against models built from four configurations."""
    results = []
    for label, config in MODERN_CONFIGS:
        right = modern_count(config)
        got = _as_count(call(fn, "my_modern_count(config)", dict(config), reference=REFERENCES,
                             instead="count each piece of a layer from config's sizes, as section 5 "
                                     "did for SmolLM2-135M."), right)
        results.append(got)
        if got == right:
            continue
        if len(results) > 1 and got == results[0]:
            return ("my_modern_count returns the same number for SmolLM2-360M and " + label
                    + ": read every size from config (config['hidden_size'], ...) instead of "
                    "writing numbers in.")
        hint = _modern_hint(got - right, config)
        where = "" if len(results) == 1 else f"Right for SmolLM2-360M, not for {label}: "
        if hint:
            return where + hint
        return (where + f"{'more' if got > right else 'fewer'} parameters than the model built from "
                "this config: recount one layer (q, k, v, o projections, gate, up, down, two "
                "RMSNorms), then the layers, the final norm and the embedding.")
    return Passed(f"Your function agrees with the model built from each of {len(MODERN_CONFIGS)} "
                  f"configurations, tied and untied; SmolLM2-360M has {results[0]:,} parameters, "
                  "the '360M' of its name.")


# --- Check your understanding -----------------------------------------------------------------

CHANGED_OPTIONS = ["post-norm", "sinusoidal", "relu", "kv per head", "tied", "softmax", "residual"]
CHANGED_RIGHT = {"post-norm", "sinusoidal", "relu", "kv per head"}


# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_CHANGED_CHOICES = (
    CHANGED_OPTIONS,
    CHANGED_RIGHT,
    "SmolLM2 put RMSNorm before each sublayer (steadier deep stacks), rotary positions in every "
    "layer (scores depend on distance), a gated SwiGLU feed-forward layer and 3 key-value heads "
    "for 9 query heads (a 3 times smaller KV cache); it kept tying, softmax attention and the "
    "residual connections.",
    {"post-norm": "the norm did change: SmolLM2 puts an RMSNorm before each sublayer "
                  "(input_layernorm, post_attention_layernorm in section 5) and a final one, "
                  "where 2017 normalised after each residual addition (section 6's table).",
     "sinusoidal": "the positions did change: SmolLM2 has no sinusoids and no position table, "
                   "rotary positions turn queries and keys in every layer (rope_theta in "
                   "section 5's config, section 6's table).",
     "relu": "the feed-forward layer did change: SwiGLU has three matrices (gate, up, down) and "
             "SiLU, where 2017 had two matrices and ReLU (section 5).",
     "kv per head": "the key-value heads did change: 9 query heads share 3 key-value heads, "
                    "k_proj is (192, 576) instead of (576, 576) (section 5).",
     "tied": "tying did not change: tie_word_embeddings is true in section 5's config, and "
             "only the tied count matches the model built there (section 5).",
     "softmax": "attention itself did not change: each head still takes a softmax of scaled "
                "dot products; only how many key-value heads there are changed (section 6).",
     "residual": "the residual connections did not change: pre-norm keeps x + sublayer(norm(x)), "
                 "and that clean residual path is the reason for moving the norm (section 6)."},
)


@checker
def check_changed_choices(answer=None):
    """Which 2017 choices did SmolLM2-135M replace? A set among CHANGED_OPTIONS."""
    return choices(answer, "answer_1", *_CHANGED_CHOICES)


def _cache_or_weights_question():
    """Question 2's right option (computed), its explanation and its hints."""
    weights = counting.smollm2_params(**counting.SMOLLM2_135M) * 2
    cache = counting.kv_cache_bytes(30, 3, 64, 8192, batch=4)
    one = counting.kv_cache_bytes(30, 3, 64, 8192) / weights
    return ("cache" if cache > weights else "weights",
            "The weights are stored once, but every sequence keeps its own keys and values: four "
            f"caches of 8,192 tokens are {cache / weights:.1f} times the weights.",
            {"weights": "the weights are stored once, the cache once per sequence: section 7 gives one "
                        f"sequence of 8,192 tokens {one:.2f} times the weights, so four sequences hold "
                        "more than the weights.",
             "same": "the cache grows with every token and every sequence while the weights stay fixed: "
                     "multiply section 7's one-sequence cache by 4 and compare."})


@checker
def check_cache_or_weights(answer=None):
    """SmolLM2-135M, 4 sequences of 8,192 tokens in bfloat16: the weights or the KV cache larger?"""
    return choice(answer, "answer_2", *_cache_or_weights_question())


# Question 3: d_model doubled, d_ff = 4 d_model, N fixed. The factor is the square of the doubling.
_WIDTH_DOUBLED = 2
_WIDTH_QUESTION = (
    _WIDTH_DOUBLED ** 2,
    "Every matrix in a layer is d × d or d × 4d, and doubling d doubles both of its sides: 2 × 2 = 4 "
    "(the biases and norms, which grow only 2 times, are too few to show).",
    {_WIDTH_DOUBLED: "2 is how the embedding (vocab × d_model) grows, with one side fixed; a layer's "
                     "matrices are d × d and d × 4d, and both sides double (section 3).",
     _WIDTH_DOUBLED ** 3: "the matrices have two sides, not three: d × d and d × 4d grow 2 × 2 times when "
                          "d doubles, and the number of layers does not change (section 3)."},
    "count one layer's matrices (4 of d × d, 2 of d × 4d) and see what doubling d does to each "
    "(section 3's width table).",
)


@checker
def check_width_factor(answer=None):
    """Doubling d_model (d_ff = 4 d_model, N fixed): by what factor do the layers grow?"""
    right, why, wrong, otherwise = _WIDTH_QUESTION
    value = number(answer, "answer_3")
    for factor, said in ((right, Passed(why)), *wrong.items()):
        if abs(value - factor) <= 0.1:
            return said
    return otherwise


# Question 4: the share of the GPUs' capacity that a training run's arithmetic used (section 8).
# A decoder-only model (every token passes through every parameter), 350 million parameters,
# 20,000 steps of 100,000 tokens, on 8 GPUs of 20 TFLOPS each, in 30 hours.
Q4 = dict(params=350e6, tokens=100_000, steps=20_000, gpus=8, flops_per_gpu=20e12, hours=30)


def gpu_share(params, tokens, steps, gpus, flops_per_gpu, hours, flops_per_token=6):
    """The rule of thumb's work (6 FLOPs per parameter per token) over Table 2's capacity
    (seconds × GPUs × FLOP/s per GPU)."""
    return flops_per_token * params * tokens * steps / (hours * 3600 * gpus * flops_per_gpu)


_GPU_SHARE_WHY = ("The work is 6 × 350·10⁶ × 100,000 × 20,000 = 4.2·10¹⁸ FLOPs, the capacity 108,000 s × 8 × "
                  "20·10¹² = 1.73·10¹⁹ FLOPs: {share:.2f} of it, about a quarter.")


@checker
def check_gpu_share(answer=None):
    """Question 4: the fraction of the GPUs' capacity that the run's arithmetic used."""
    value = number(answer, "answer_4")
    right = gpu_share(**Q4)
    if abs(value - right) <= 0.03 * right:
        return Passed(_GPU_SHARE_WHY.format(share=right))
    two = gpu_share(**Q4, flops_per_token=2)
    mistakes = [
        (right * 8, "you left out the 8 GPUs: the capacity is seconds × GPUs × FLOP/s of each GPU, "
                    "as Table 2 computes it (section 8)."),
        (right * 3600, "you used hours: FLOP/s are per second, so the time is 30 × 3,600 = 108,000 s "
                       "(section 8 turns 12 hours into 43,200 s)."),
        (right * 60, "you used minutes: FLOP/s are per second, so the time is 30 × 3,600 = 108,000 s."),
        (two, "2 FLOPs per parameter per token is the forward pass only: training adds the backward "
              "pass, 4 more, so the rule of thumb is 6 (section 8's count on the tiny model)."),
        (two * 8, "two slips: 2 FLOPs per parameter per token is the forward pass only (training "
                  "costs 6), and the capacity counts all 8 GPUs."),
        (right / 2, "half the answer: either 3 FLOPs per parameter per token (training costs 6: 2 "
                    "for the forward pass and 4 for the backward pass, section 8), or you halved the "
                    "tokens (in a decoder-only model every token passes through every parameter; "
                    "section 8 halves them for the encoder–decoder only, where a source token meets "
                    "only the encoder)."),
        (1 / right, "upside down: divide the model's arithmetic (the rule of thumb) by the GPUs' "
                    "capacity, which is larger."),
        (right * 100, "that is a percentage: give the fraction, a number between 0 and 1."),
    ]
    for wrong, hint in mistakes:
        if abs(value - wrong) <= 0.03 * wrong:
            return hint
    return ("not quite: the work is 6 × parameters × tokens per step × steps, the capacity seconds × "
            "GPUs × FLOP/s per GPU; divide the first by the second (section 8).")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_modern_count, counting.smollm2_params,
         lambda f: lambda config: f(**counting.llama_sizes(config)))
