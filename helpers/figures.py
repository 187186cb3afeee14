"""Drawings the notebooks share.

``attention_grid`` draws one attention map (a row per reading token, a column per token read).
``draw_transformer`` draws the paper's Figure 1 (the encoder–decoder) for a given size, with the
tensor shape written on every arrow. The shapes are computed from the configuration and the
example's sizes by ``transformer_shapes``, so a notebook can check them against a real run.
``draw_attention`` draws the paper's Figure 2 (scaled dot-product attention, multi-head
attention) the same way, its shapes from ``attention_shapes``.
"""

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

# The paper's colours, roughly: attention orange, add & norm yellow, feed-forward blue, ...
COLOURS = {"attention": "#fbd9b0", "norm": "#f4f1b5", "ffn": "#c9e4f6", "embedding": "#f8d3d6",
           "linear": "#dcd6f2", "softmax": "#cfe9cf", "stack": "#f2f2f2"}


def transformer_shapes(vocab, d_model, heads, d_ff, n_layers, n_src, n_tgt, batch=1):
    """The shape of every tensor the figure names, for one batch of the given sizes."""
    return {
        "source ids": (batch, n_src),
        "source embedded": (batch, n_src, d_model),
        "encoder self-attention weights": (batch, heads, n_src, n_src),
        "encoder FFN hidden": (batch, n_src, d_ff),
        "memory": (batch, n_src, d_model),
        "decoder input ids": (batch, n_tgt),
        "target embedded": (batch, n_tgt, d_model),
        "decoder masked self-attention weights": (batch, heads, n_tgt, n_tgt),
        "cross-attention weights": (batch, heads, n_tgt, n_src),
        "decoder FFN hidden": (batch, n_tgt, d_ff),
        "decoder output": (batch, n_tgt, d_model),
        "logits": (batch, n_tgt, vocab),
        "probabilities": (batch, n_tgt, vocab),
    }


def _fmt(shape):
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _box(ax, x, y, w, h, text, colour, size=9):
    """A rounded box centred on x whose bottom is at y; returns (bottom, top)."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=colour, edgecolor="black", linewidth=1))
    ax.text(x, y + h / 2, text, ha="center", va="center", fontsize=size)
    return y, y + h


def _arrow(ax, x0, y0, x1, y1, label=None, side="right", dashed=False, colour="black"):
    """An arrow from (x0, y0) to (x1, y1), with a shape label beside its middle."""
    ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=11,
                                 linewidth=1.1, color=colour, linestyle="--" if dashed else "-",
                                 shrinkA=0, shrinkB=0))
    if label:
        dx = 0.12 if side == "right" else -0.12
        ax.text((x0 + x1) / 2 + dx, (y0 + y1) / 2, label, ha="left" if side == "right" else "right",
                va="center", fontsize=8.5, color="#1f4e9c", family="monospace")


def _residual(ax, x_side, y_from, y_into, x_box_edge, x_stream):
    """A dashed shortcut: from the stream below a sublayer, around it, into the add & norm box."""
    ax.plot([x_stream, x_side, x_side], [y_from, y_from, y_into], color="grey", linestyle="--",
            linewidth=1)
    ax.add_patch(FancyArrowPatch((x_side, y_into), (x_box_edge, y_into), arrowstyle="-|>",
                                 mutation_scale=9, color="grey", linestyle="--", linewidth=1,
                                 shrinkA=0, shrinkB=0))


def draw_transformer(vocab, d_model, heads, d_ff, n_layers, n_src, n_tgt, batch=1,
                     src_words=None, tgt_words=None, out_words=None, title=None):
    """The paper's Figure 1 for this configuration and example sizes, shapes on every arrow.

    src_words / tgt_words / out_words: optional text shown under the inputs and above the
    output (e.g. "c a b e d"). Returns (figure, the dictionary of transformer_shapes).
    """
    s = transformer_shapes(vocab, d_model, heads, d_ff, n_layers, n_src, n_tgt, batch)
    fig, ax = plt.subplots(figsize=(12, 12))
    ax.set_xlim(0, 16)
    ax.set_ylim(-0.9, 17.7)
    ax.axis("off")
    w, gap = 4.6, 0.85                       # box width, length of an arrow between two boxes
    xe, xd = 4.1, 11.5                        # centre of the encoder and of the decoder column
    d_k = d_model // heads

    def stack(x, parts, y0, side):
        """Boxes bottom to top from y0; arrows between them carry the stream's shape."""
        tops, edges = [], []
        y = y0
        for i, (text, colour, h, label) in enumerate(parts):
            if i:
                _arrow(ax, x, y, x, y + gap, label, side)
                y += gap
            bottom, top = _box(ax, x, y, w, h, text, colour)
            edges.append((bottom, top))
            tops.append(top)
            y = top
        return edges

    # --- inputs, embeddings, positions (both columns) -----------------------------------------
    for x, ids, emb, words, name in ((xe, "source ids", "source embedded", src_words, "Inputs"),
                                     (xd, "decoder input ids", "target embedded", tgt_words,
                                      "Outputs (shifted right)")):
        label = name + (f': "{words}"' if words else "")
        ax.text(x, -0.55, label, ha="center", va="center", fontsize=10)
        side = "right" if x == xe else "left"
        _arrow(ax, x, -0.3, x, 0.6, _fmt(s[ids]), side)
        _box(ax, x, 0.6, w, 0.8, f"{'Input' if x == xe else 'Output'} Embedding\n"
             f"E[token] × √{d_model}  (shared E: {vocab} × {d_model})", COLOURS["embedding"], 9)
        _arrow(ax, x, 1.4, x, 2.05, _fmt(s[emb]), side)
        ax.add_patch(Circle((x, 2.3), 0.25, facecolor="white", edgecolor="black"))
        ax.text(x, 2.3, "+", ha="center", va="center", fontsize=13)
        side_x = x - 0.45 if x == xe else x + 0.45
        ax.text(side_x, 2.3, "Positional\nEncoding PE (sin/cos)", ha="right" if x == xe else "left",
                va="center", fontsize=8.5)

    # --- encoder stack ---------------------------------------------------------------------
    se = _fmt(s["source embedded"])
    enc = [(f"Multi-Head Attention\n{heads} heads of d_k = {d_k}, padding mask\nweights "
            f"{_fmt(s['encoder self-attention weights'])}", COLOURS["attention"], 1.15, None),
           ("Add & Norm", COLOURS["norm"], 0.5, se),
           (f"Feed Forward\n{d_model} → {d_ff} → {d_model}, ReLU\nhidden {_fmt(s['encoder FFN hidden'])}",
            COLOURS["ffn"], 1.15, se),
           ("Add & Norm", COLOURS["norm"], 0.5, se)]
    y_block = 3.35
    _arrow(ax, xe, 2.55, xe, y_block + 0.35, se, "right")
    enc_edges = stack(xe, enc, y_block + 0.35, "right")
    enc_top = enc_edges[-1][1] + 0.25
    ax.add_patch(FancyBboxPatch((xe - w / 2 - 0.55, y_block), w + 1.1, enc_top - y_block,
                                boxstyle="round,pad=0.02,rounding_size=0.25", facecolor="none",
                                edgecolor="#555555", linewidth=1.3, zorder=0))
    ax.text(xe - w / 2 - 0.75, (y_block + enc_top) / 2, f"{n_layers}×", ha="right", va="center",
            fontsize=13)
    for sub, norm in ((0, 1), (2, 3)):                          # residuals on the left
        below = enc_edges[sub][0] - (0.15 if sub == 0 else 0.3)   # the first one inside the frame
        _residual(ax, xe - w / 2 - 0.3, below, (enc_edges[norm][0] + enc_edges[norm][1]) / 2,
                  xe - w / 2, xe)

    # --- decoder stack ---------------------------------------------------------------------
    td = _fmt(s["target embedded"])
    dec = [(f"Masked Multi-Head Attention\n{heads} heads, causal mask\nweights "
            f"{_fmt(s['decoder masked self-attention weights'])}", COLOURS["attention"], 1.15, None),
           ("Add & Norm", COLOURS["norm"], 0.5, td),
           (f"Multi-Head Attention (cross-attention)\nQ from below; K, V from the memory\nweights "
            f"{_fmt(s['cross-attention weights'])}, padding mask", COLOURS["attention"], 1.15, td),
           ("Add & Norm", COLOURS["norm"], 0.5, td),
           (f"Feed Forward\n{d_model} → {d_ff} → {d_model}, ReLU\nhidden {_fmt(s['decoder FFN hidden'])}",
            COLOURS["ffn"], 1.15, td),
           ("Add & Norm", COLOURS["norm"], 0.5, td)]
    _arrow(ax, xd, 2.55, xd, y_block + 0.35, td, "left")
    dec_edges = stack(xd, dec, y_block + 0.35, "left")
    dec_top = dec_edges[-1][1] + 0.25
    ax.add_patch(FancyBboxPatch((xd - w / 2 - 0.55, y_block), w + 1.1, dec_top - y_block,
                                boxstyle="round,pad=0.02,rounding_size=0.25", facecolor="none",
                                edgecolor="#555555", linewidth=1.3, zorder=0))
    ax.text(xd + w / 2 + 0.75, (y_block + dec_top) / 2, f"×{n_layers}", ha="left", va="center",
            fontsize=13)
    for sub, norm in ((0, 1), (2, 3), (4, 5)):                  # residuals on the right
        below = dec_edges[sub][0] - (0.15 if sub == 0 else 0.3)
        _residual(ax, xd + w / 2 + 0.3, below, (dec_edges[norm][0] + dec_edges[norm][1]) / 2,
                  xd + w / 2, xd)

    # --- the memory: encoder output into every decoder layer's cross-attention ---------------
    cross_mid = sum(dec_edges[2]) / 2
    x_turn, y_up = xe + w / 2 + 0.85, enc_top + 0.45          # just right of the encoder's frame
    ax.plot([xe, xe, x_turn, x_turn], [enc_edges[-1][1], y_up, y_up, cross_mid], color="black",
            linewidth=1.1)
    _arrow(ax, x_turn, cross_mid, xd - w / 2, cross_mid)
    ax.text(xe, y_up + 0.12, f"memory {_fmt(s['memory'])}", ha="left", va="bottom",
            fontsize=8.5, color="#1f4e9c", family="monospace")
    ax.text((x_turn + xd - w / 2 - 0.55) / 2, cross_mid + 0.1, f"K, V\n{_fmt(s['memory'])}", ha="center",
            va="bottom", fontsize=8.5, color="#1f4e9c", family="monospace")

    # --- output layer ----------------------------------------------------------------------
    y = dec_top
    _arrow(ax, xd, y, xd, y + gap, _fmt(s["decoder output"]), "left")
    _, y = _box(ax, xd, y + gap, w, 0.8, f"Linear: y Eᵀ  ({d_model} → {vocab})\ntied to E: no new weights",
                COLOURS["linear"])
    _arrow(ax, xd, y, xd, y + gap, f"logits {_fmt(s['logits'])}", "left")
    _, y = _box(ax, xd, y + gap, w, 0.55, "Softmax", COLOURS["softmax"])
    _arrow(ax, xd, y, xd, y + 0.75, _fmt(s["probabilities"]), "left")
    ax.text(xd, y + 1.0, "Output Probabilities" + (f' (target: "{out_words}")' if out_words else ""),
            ha="center", va="center", fontsize=10)

    ax.text(0.2, 16.9, f"This model: d_model {d_model}, {heads} heads, d_ff {d_ff},\n"
            f"{n_layers} + {n_layers} layers, vocabulary {vocab}, batch {batch}.\n"
            "The paper's base model: 512, 8 heads, 2048, 6 + 6 layers,\nabout 37,000 tokens.\n"
            "Blue: the tensor's shape on each arrow.\nDashed grey: the residual connections\n"
            "(each carries the shape of the stream it leaves).",
            ha="left", va="top", fontsize=9)
    ax.set_title(title or "The Transformer (the paper's Figure 1) with the shape on every arrow",
                 fontsize=12)
    return fig, s


def attention_shapes(d_model, heads, n, batch=1):
    """The shape of every tensor Figure 2 names, for self-attention on (batch, n, d_model)."""
    d_k = d_model // heads
    per_head, table = (batch, heads, n, d_k), (batch, heads, n, n)
    return {"x": (batch, n, d_model), "q, k, v": per_head, "q @ k.T": table, "scaled": table,
            "masked": table, "weights": table, "heads": per_head, "concat": (batch, n, d_model),
            "output": (batch, n, d_model)}


def _stacked_box(ax, x, y, w, h, text, colour, copies, size=9):
    """A box with `copies - 1` shadows behind it (the paper's h parallel layers)."""
    for i in range(copies - 1, 0, -1):
        ax.add_patch(FancyBboxPatch((x - w / 2 + 0.12 * i, y + 0.12 * i), w, h,
                                    boxstyle="round,pad=0.02,rounding_size=0.1", facecolor=colour,
                                    edgecolor="grey", linewidth=0.8))
    return _box(ax, x, y, w, h, text, colour, size)


def draw_attention(d_model, heads, n, batch=1, title=None):
    """The paper's Figure 2 for self-attention with these sizes, each box named as the course's code
    names it and the shape on every arrow. Returns (figure, the dictionary of attention_shapes)."""
    s = attention_shapes(d_model, heads, n, batch)
    d_k = d_model // heads
    fig, ax = plt.subplots(figsize=(13, 8.2))
    ax.set_xlim(0, 20)
    ax.set_ylim(-0.6, 11.2)
    ax.axis("off")

    # --- left: scaled dot-product attention (every head at once: the head axis is the 2nd) -----
    x, w, gap = 4.3, 4.0, 0.75
    ax.text(x, 10.7, "Scaled Dot-Product Attention\nhelpers.attention.attention(q, k, v, mask)",
            ha="center", va="center", fontsize=11, weight="bold")
    for name, x_in in (("Q", x - 1.2), ("K", x + 0.2)):
        ax.text(x_in, -0.35, name, ha="center", va="center", fontsize=11)
        _arrow(ax, x_in, -0.1, x_in, 0.8)
    ax.text(x - 1.35, 0.35, _fmt(s["q, k, v"]), ha="right", va="center", fontsize=8.5,
            color="#1f4e9c", family="monospace")
    steps = [("MatMul\nq @ k.transpose(-2, -1)", COLOURS["linear"], 0.9, "q @ k.T"),
             (f"Scale\n/ math.sqrt(d_k) = / {d_k ** 0.5:g}", COLOURS["norm"], 0.9, "scaled"),
             ("Mask (opt.)\n+ mask (notebook 04)", COLOURS["stack"], 0.9, "masked"),
             ("SoftMax\ntorch.softmax(scores, dim=-1)", COLOURS["softmax"], 0.9, "weights")]
    y = 0.8
    for text, colour, h, key in steps:
        _, y = _box(ax, x, y, w, h, text, colour)
        _arrow(ax, x, y, x, y + gap, _fmt(s[key]), "right")
        y += gap
    _, top = _box(ax, x, y, w, 0.9, "MatMul\nweights @ v", COLOURS["linear"])
    x_v = x + w / 2 + 0.9                               # V goes up beside the column to the last MatMul
    ax.text(x_v, -0.35, "V", ha="center", va="center", fontsize=11)
    ax.plot([x_v, x_v], [-0.1, y + 0.45], color="black", linewidth=1.1)
    _arrow(ax, x_v, y + 0.45, x + w / 2, y + 0.45)
    ax.text(x_v + 0.12, 2.2, _fmt(s["q, k, v"]), ha="left", va="center", fontsize=8.5,
            color="#1f4e9c", family="monospace", rotation=90)
    _arrow(ax, x, top, x, top + gap, f"heads {_fmt(s['heads'])}", "right")

    # --- right: multi-head attention ----------------------------------------------------------
    xr, wl = 14.2, 2.3
    ax.text(xr, 10.7, "Multi-Head Attention\nhelpers.attention.MultiHeadAttention(d_model, h)",
            ha="center", va="center", fontsize=11, weight="bold")
    columns = {"V": xr - 2.7, "K": xr, "Q": xr + 2.7}          # the paper's order, V on the left
    for name, xc in columns.items():
        ax.text(xc, -0.35, f"{name}: x {_fmt(s['x'])}", ha="center", va="center", fontsize=9)
        _arrow(ax, xc, -0.1, xc, 0.8)
        _stacked_box(ax, xc, 0.8, wl, 1.0, f"Linear\nx @ W_{name}, then\nsplit_heads(·, h)",
                     COLOURS["linear"], min(heads, 4))
        _arrow(ax, xc, 1.8 + 0.36, xc, 3.6, _fmt(s["q, k, v"]), "left" if name == "V" else "right")
    _, top = _stacked_box(ax, xr, 3.6, 8.0, 1.3,
                          f"Scaled Dot-Product Attention  (left)\nall h = {heads} heads at once: "
                          f"attention(q, k, v)\nd_k = {d_model} / {heads} = {d_k} numbers per head",
                          COLOURS["attention"], min(heads, 4))
    ax.text(xr + 4.55, 4.75, f"h = {heads}", ha="left", va="center", fontsize=11)
    _arrow(ax, xr, top + 0.36, xr, top + 1.3, f"heads {_fmt(s['heads'])}", "right")
    _, top = _box(ax, xr, top + 1.3, 4.0, 0.9, "Concat\nmerge_heads(heads)", COLOURS["norm"])
    _arrow(ax, xr, top, xr, top + 0.9, f"concat {_fmt(s['concat'])}", "right")
    _, top = _box(ax, xr, top + 0.9, 4.0, 0.9, "Linear\nconcat @ W_O  (out_proj)", COLOURS["linear"])
    _arrow(ax, xr, top, xr, top + 0.9, f"output {_fmt(s['output'])}", "right")
    ax.text(xr, top + 1.15, "the sublayer's output, the shape of x", ha="center", va="center", fontsize=9)
    ax.plot([9.3, 9.3], [-0.5, 10.3], color="#bbbbbb", linewidth=1)
    ax.set_title(title or f"The paper's Figure 2 for d_model = {d_model}, h = {heads}, {n} tokens, "
                 f"batch {batch}: the shape on every arrow (batch, heads, queries or tokens, ...)",
                 fontsize=11)
    return fig, s


def attention_grid(ax, table, rows, cols, title, numbers=True, vmax=1.0):
    """One attention map: table (len(rows), len(cols)) from white (0) to dark blue (vmax), a row per
    reading token (labelled on the left), a column per token read; each weight written in its cell
    when `numbers` is true (weights of 0.05 or less are left blank, to keep a small grid legible)."""
    table = table.detach().float()
    ax.imshow(table, cmap="Blues", vmin=0, vmax=vmax, aspect="auto")
    if numbers:
        for a in range(len(rows)):
            for b in range(len(cols)):
                if table[a, b] > 0.05:
                    ax.text(b, a, f"{table[a, b]:.1f}", ha="center", va="center", fontsize=7,
                            color="white" if table[a, b] > 0.6 * vmax else "black")
    ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_title(title, fontsize=9)
