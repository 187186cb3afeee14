"""The course in one place: where the repository lives and which notebooks it has.

Everything that names the repository (the bootstrap cell of every notebook, the
Open-in-Colab and Open-in-Kaggle badges in the README) is generated from here by
``python -m helpers.course.notebooks``; a test fails when a copy disagrees.
"""

REPO_URL = "https://github.com/transformer-step-by-step/original-transformer"
REPO_REF = "main"  # the branch or tag the bootstrap cell clones
CLONE_DIR = "original-transformer"  # folder the bootstrap cell clones into (Colab, Kaggle)

# (file stem, title, one line); each notebook's time is estimated by helpers.course.timing
NOTEBOOKS = [
    ("00_tour", "The whole model in 40 minutes",
     "A tour: positions and an encoder layer from the formulas, the tiny model trained, its "
     "cross-attention, the base model counted."),
    ("01_positions", "Positions",
     "Embeddings × √d_model plus sinusoidal positions; shifts are rotations."),
    ("02_layer_norm", "Layer norm",
     "LayerNorm by hand, batch norm, shortcut gradients, post-norm vs pre-norm, RMSNorm."),
    ("03_encoder_layer", "Encoder layer",
     "Multi-head attention and a full post-norm encoder layer equal to PyTorch's."),
    ("04_cross_attention", "Cross-attention",
     "Decoder layer, cross-attention, tied output; the whole model equal to nn.Transformer."),
    ("05_training_recipe", "Training recipe",
     "Adam, warmup, dropout, label smoothing; train the reversal model and watch it decode."),
    ("06_parameter_count", "Parameter count",
     "63,082,496 for the base model, GPT-2 small and SmolLM2-135M counted and checked."),
    ("07_masks_and_shuffle_test", "Masks and the shuffle test",
     "Why positions matter, padding and causal masks, and the inverted-mask pitfall."),
    ("08_decoding", "Decoding",
     "Greedy vs beam search with the paper's length penalty, the KV cache, a saved model."),
    ("09_translation", "Translation",
     "English to French number words: byte-pair pieces, the data pipeline, BLEU by hand, what the model "
     "does not learn."),
    ("10_many_workers", "Training on many workers",
     "Batches by tokens, gradient accumulation, data parallel with torch.distributed, the all-reduce."),
    ("11_real_sentences", "Real sentences",
     "English to French from Tatoeba: a split by sentence, shared pieces, BLEU with several references, "
     "the recipe's parts measured."),
    ("12_decoder_only", "Decoder-only vs encoder–decoder",
     "One stack instead of two: prefix and causal LMs trained on 11's sentences and measured against the "
     "encoder–decoder."),
]


def github_path(folder, stem):
    """Owner/repo/blob/ref/folder/stem.ipynb, the part of a URL badges share."""
    owner_repo = REPO_URL.removeprefix("https://github.com/").removesuffix(".git")
    return f"{owner_repo}/blob/{REPO_REF}/{folder}/{stem}.ipynb"


def colab_url(folder, stem):
    return f"https://colab.research.google.com/github/{github_path(folder, stem)}"


def kaggle_url(folder, stem):
    return f"https://kaggle.com/kernels/welcome?src=https://github.com/{github_path(folder, stem)}"
