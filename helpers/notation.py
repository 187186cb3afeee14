"""The paper's symbols as the course uses them: one table, one meaning per symbol.

Each row: the symbol (LaTeX), what it means, its value in the paper's base model and in
the course's tiny model (notebook 05's reversal model; None where a symbol has no one
value), the notebook that introduces it and the heading of that section. The website's
notation page is made from this table, and ``tests/test_notation.py`` checks the values
against the code and each heading against its notebook.
"""

from collections import namedtuple

Symbol = namedtuple("Symbol", "tex meaning base tiny notebook section")

SYMBOLS = [
    Symbol(r"d_{\text{model}}", "width of every token vector, in every layer", 512, 64,
           "01_positions", "The input: scaled embedding plus position"),
    Symbol(r"n", "number of tokens in a sequence", None, None,
           "01_positions", "The input: scaled embedding plus position"),
    Symbol(r"n_{\text{vocab}}", "number of tokens in the vocabulary (shared by source and target)",
           37_000, 13, "01_positions", "The input: scaled embedding plus position"),
    Symbol(r"PE_{(pos,\,2i)},\ PE_{(pos,\,2i+1)}",
           "the sinusoidal position table: the sine and cosine of pos divided by 10000 to the power "
           "2i/d_model", None, None,
           "01_positions", "Sinusoidal positions"),
    Symbol(r"\gamma,\ \beta", "LayerNorm's learned gain and shift, one per feature", None, None,
           "02_layer_norm", "1. The formula"),
    Symbol(r"\epsilon_{\text{LN}}", "LayerNorm's small constant under the square root", 1e-5, 1e-5,
           "02_layer_norm", "1. The formula"),
    Symbol(r"h", "number of attention heads", 8, 4,
           "03_encoder_layer", "2. Multi-head attention as matrices"),
    Symbol(r"d_k,\ d_v", "width of one head's queries and keys, and of its values: d_model / h", 64, 16,
           "03_encoder_layer", "2. Multi-head attention as matrices"),
    Symbol(r"Q,\ K,\ V", "queries, keys and values: the rows each token asks with, is found by, gives",
           None, None, "03_encoder_layer", "2. Multi-head attention as matrices"),
    Symbol(r"W^Q,\ W^K,\ W^V,\ W^O", "the projections into heads and back out of them", None, None,
           "03_encoder_layer", "2. Multi-head attention as matrices"),
    Symbol(r"d_{ff}", "width of the feed-forward layer's hidden layer", 2048, 256,
           "03_encoder_layer", "5. The feed-forward layer"),
    Symbol(r"P_{drop}", "dropout rate", 0.1, 0.1, "03_encoder_layer", "9. Dropout"),
    Symbol(r"N", "number of layers in the encoder, and in the decoder", 6, 2,
           "04_cross_attention", "5. The whole model"),
    Symbol(r"\text{memory}", "the encoder's output, read by every decoder layer's cross-attention",
           None, None, "04_cross_attention", "2. Cross-attention"),
    Symbol(r"\beta_1,\ \beta_2", "Adam's decay rates of its moving averages", (0.9, 0.98), (0.9, 0.98),
           "05_training_recipe", "1. Adam with the paper's settings"),
    Symbol(r"\epsilon_{\text{Adam}}", "Adam's small constant in the denominator", 1e-9, 1e-9,
           "05_training_recipe", "1. Adam with the paper's settings"),
    Symbol(r"warmup\_steps", "steps of the learning rate's linear rise", 4000, 400,
           "05_training_recipe", "2. The warmup schedule"),
    Symbol(r"lrate", "the learning rate at a step", None, None,
           "05_training_recipe", "2. The warmup schedule"),
    Symbol(r"\epsilon_{ls}", "label smoothing: the probability spread away from the right token", 0.1, 0.1,
           "05_training_recipe", "4. Label smoothing"),
    Symbol(r"h_{kv}", "number of key/value heads (grouped-query attention, later models)", None, None,
           "06_parameter_count", "5. SmolLM2-135M"),
    Symbol(r"\pi", "a permutation of the tokens (the shuffle test)", None, None,
           "07_masks_and_shuffle_test", "1. The shuffle test"),
    Symbol(r"T", "sampling temperature: the scores are divided by T before the softmax", None, None,
           "08_decoding", "7. Sampling"),
    Symbol(r"k", "beam size", 4, 4, "08_decoding", "4. Beam search by hand"),
    Symbol(r"lp(Y),\ \alpha", "the length penalty ((5 + |Y|) / 6)^α and its exponent", 0.6, 0.6,
           "08_decoding", "3. The score of a hypothesis"),
]

# Notebook 10 (training on many workers): kept as its own block, added after the table above.
SYMBOLS += [
    Symbol(r"W", "world size: the number of worker processes that train one model together (the "
           "paper's 8 GPUs; 2 in notebook 10)", None, None,
           "10_many_workers", "3. Data parallel with `torch.distributed`"),
    Symbol(r"\text{rank}", "a worker's number, from 0 to W - 1", None, None,
           "10_many_workers", "3. Data parallel with `torch.distributed`"),
    Symbol(r"n_{\text{micro}}", "number of micro-batches accumulated into one optimizer step", None, None,
           "10_many_workers", "2. Gradient accumulation: one bigger batch in several passes"),
]
