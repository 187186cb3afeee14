"""Parameter counts from the formulas (paper §3, Table 3), for the 2017 model, GPT-2 and SmolLM2.

Names follow the paper: d_model, d_ff, h, N (layers per stack), vocab. The number of heads h
never changes a count: the heads split the d_model columns of W_Q, W_K, W_V among themselves.
"""


def count(module):
    """Parameters of a torch module; a tensor shared by two layers (a tied embedding) counts once."""
    return sum(p.numel() for p in module.parameters())


def attention_params(d_model, bias=True):
    """Multi-head attention: W_Q, W_K, W_V, W_O (d_model × d_model each) and their biases, 4d² + 4d."""
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def ffn_params(d_model, d_ff):
    """FFN(x) = max(0, x W1 + b1) W2 + b2: W1 (d_model × d_ff), b1, W2 (d_ff × d_model), b2."""
    return d_model * d_ff + d_ff + d_ff * d_model + d_model


def norm_params(d_model):
    """LayerNorm: a gain γ and a bias β of d_model numbers each."""
    return 2 * d_model


def encoder_layer_params(d_model, d_ff):
    """Self-attention, FFN and two LayerNorms."""
    return attention_params(d_model) + ffn_params(d_model, d_ff) + 2 * norm_params(d_model)


def decoder_layer_params(d_model, d_ff):
    """Masked self-attention, cross-attention, FFN and three LayerNorms."""
    return 2 * attention_params(d_model) + ffn_params(d_model, d_ff) + 3 * norm_params(d_model)


def transformer_params(vocab, d_model, d_ff, N, h=None, tied=True):
    """The 2017 encoder–decoder: N encoder and N decoder layers and one embedding shared by the
    source, the target and the output layer (tied=False: a separate output matrix)."""
    embedding = vocab * d_model * (1 if tied else 2)
    return embedding + N * (encoder_layer_params(d_model, d_ff) + decoder_layer_params(d_model, d_ff))


def gpt2_params(vocab, context, d_model, N, h=None, d_ff=None):
    """GPT-2: token and position embeddings, N blocks (the pieces of an encoder layer: attention,
    FFN, two LayerNorms), a final LayerNorm; the output layer reuses the token embedding."""
    d_ff = 4 * d_model if d_ff is None else d_ff
    return (vocab * d_model + context * d_model + N * encoder_layer_params(d_model, d_ff)
            + norm_params(d_model))


def gqa_attention_params(d_model, h, h_kv):
    """Grouped-query attention without biases: h query heads, h_kv key-value heads, d_k = d_model/h."""
    d_k = d_model // h
    return d_model * h * d_k + 2 * d_model * h_kv * d_k + h * d_k * d_model


def swiglu_params(d_model, d_ff):
    """SwiGLU feed-forward down(SiLU(gate(x)) * up(x)): three matrices, no biases."""
    return 3 * d_model * d_ff


def smollm2_params(vocab, d_model, h, h_kv, d_ff, N, tied=True):
    """A Llama-style decoder (SmolLM2): N layers of grouped-query attention, SwiGLU and two
    RMSNorms (a gain only, d_model numbers), a final RMSNorm, an embedding tied to the output."""
    layer = gqa_attention_params(d_model, h, h_kv) + swiglu_params(d_model, d_ff) + 2 * d_model
    return vocab * d_model * (1 if tied else 2) + N * layer + d_model


# Configurations, as keyword arguments of the functions above (and of the checker).
BASE = dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=6)                 # paper, Table 3
TINY = dict(vocab=13, d_model=64, h=4, d_ff=256, N=2)                       # the reversal model
GPT2_SMALL = dict(vocab=50_257, context=1024, d_model=768, h=12, N=12)
SMOLLM2_135M = dict(vocab=49_152, d_model=576, h=9, h_kv=3, d_ff=1536, N=30)
