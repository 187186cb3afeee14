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


# --- Llama-style models (SmolLM2) from a Hugging Face config, and the KV cache ---------------

def llama_sizes(config):
    """The sizes of smollm2_params from a Hugging Face config dict (config.json's field names)."""
    return dict(vocab=config["vocab_size"], d_model=config["hidden_size"],
                h=config["num_attention_heads"], h_kv=config["num_key_value_heads"],
                d_ff=config["intermediate_size"], N=config["num_hidden_layers"],
                tied=bool(config.get("tie_word_embeddings", True)))


def llama_modules(vocab, d_model, h, h_kv, d_ff, N, tied=True):
    """Modules with a Llama-style decoder's shapes (the names of the Llama code), to be counted.

    No forward pass: embed_tokens, N layers of q/k/v/o projections, gate/up/down projections and
    two RMSNorms, a final RMSNorm, and lm_head (the embedding itself when tied). Build it under
    ``with torch.device("meta")`` to count a large one without memory.
    """
    from torch import nn

    d_k = d_model // h

    def layer():
        return nn.ModuleDict({
            "q_proj": nn.Linear(d_model, h * d_k, bias=False),
            "k_proj": nn.Linear(d_model, h_kv * d_k, bias=False),
            "v_proj": nn.Linear(d_model, h_kv * d_k, bias=False),
            "o_proj": nn.Linear(h * d_k, d_model, bias=False),
            "gate_proj": nn.Linear(d_model, d_ff, bias=False),
            "up_proj": nn.Linear(d_model, d_ff, bias=False),
            "down_proj": nn.Linear(d_ff, d_model, bias=False),
            "input_layernorm": nn.RMSNorm(d_model),
            "post_attention_layernorm": nn.RMSNorm(d_model)})

    model = nn.ModuleDict({"embed_tokens": nn.Embedding(vocab, d_model),
                           "layers": nn.ModuleList(layer() for _ in range(N)),
                           "norm": nn.RMSNorm(d_model),
                           "lm_head": nn.Linear(d_model, vocab, bias=False)})
    if tied:
        model["lm_head"].weight = model["embed_tokens"].weight
    return model


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, tokens, batch=1, bytes_per_number=2):
    """Memory of the keys and values a decoder keeps while it generates (the KV cache), in bytes.

    2 (keys and values) x layers x key-value heads x head size numbers per token, for every token
    of every sequence in the batch; bytes_per_number 2 for bfloat16/float16, 4 for float32.
    """
    return 2 * n_layers * n_kv_heads * head_dim * tokens * batch * bytes_per_number


# Hugging Face configurations (the fields of config.json that fix the count; rotary positions
# and RMSNorm's eps have no parameters).
SMOLLM2_135M_CONFIG = {
    "hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9,
    "num_key_value_heads": 3, "num_hidden_layers": 30, "vocab_size": 49_152,
    "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
    "rms_norm_eps": 1e-05, "max_position_embeddings": 8192, "rope_theta": 100000.0}
SMOLLM2_360M_CONFIG = {
    "hidden_size": 960, "intermediate_size": 2560, "num_attention_heads": 15,
    "num_key_value_heads": 5, "num_hidden_layers": 32, "vocab_size": 49_152,
    "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
    "rms_norm_eps": 1e-05, "max_position_embeddings": 8192, "rope_theta": 100000.0}


# --- FLOPs of a forward pass (06's way: the matrix products, 2 FLOPs per multiply-add) --------

def linear_flops(rows, d_in, d_out):
    """x W for `rows` positions, W (d_in × d_out): rows · d_in · d_out multiply-adds, 2 FLOPs each
    (the bias add is not a product and is left out, as torch's FLOP counter does)."""
    return 2 * rows * d_in * d_out


def attention_products_flops(n_q, n_k, d_model):
    """The attention's own products over all h heads: Q Kᵀ (n_q × n_k scores of d_k numbers per
    head) and the weights times V, 2 · n_q · n_k · d_model each; the mask hides no product (every
    score is computed, then -inf is added)."""
    return 2 * 2 * n_q * n_k * d_model


def block_flops(n, d_model, d_ff):
    """An encoder layer (or a decoder-only block) on n positions: W_Q, W_K, W_V, W_O, the
    attention's products on n × n, and the FFN's W1, W2."""
    return (4 * linear_flops(n, d_model, d_model) + attention_products_flops(n, n, d_model)
            + linear_flops(n, d_model, d_ff) + linear_flops(n, d_ff, d_model))


def encoder_decoder_flops(src_len, tgt_len, d_model, d_ff, N, vocab):
    """Forward FLOPs of one pair in the 2017 encoder–decoder (N + N layers, tied output): the
    encoder on the src_len source pieces; the decoder on its tgt_len + 1 inputs (<s>, target),
    its cross-attention's W_K, W_V reading the src_len memory positions; the output layer at the
    tgt_len + 1 positions that are scored (target, </s>). LayerNorms, softmax, ReLU, biases and
    the embedding lookup do no matrix product and are left out."""
    s, m = src_len, tgt_len + 1
    cross = (2 * linear_flops(m, d_model, d_model) + 2 * linear_flops(s, d_model, d_model)
             + attention_products_flops(m, s, d_model))
    decoder = block_flops(m, d_model, d_ff) + cross
    return N * (block_flops(s, d_model, d_ff) + decoder) + linear_flops(m, d_model, vocab)


def decoder_only_flops(src_len, tgt_len, d_model, d_ff, N, vocab, scored=None):
    """Forward FLOPs of one pair as one sequence (source, <s>, target: src_len + 1 + tgt_len
    positions) through N blocks, and the tied output layer at the `scored` positions only (by
    default tgt_len + 1: the separator and the target predict target, </s>; src_len + 1 + tgt_len
    when the source is scored too). Left out as in encoder_decoder_flops."""
    n = src_len + 1 + tgt_len
    scored = tgt_len + 1 if scored is None else scored
    return N * block_flops(n, d_model, d_ff) + linear_flops(scored, d_model, vocab)
