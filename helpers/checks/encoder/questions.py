"""Check your understanding: where the parameters are, what each position reads, and the path length of
convolutions."""



from helpers.checks import Passed, _sentence, checker, choice, number


# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_MORE_HEADS = (
    "feed-forward",
    "More heads only cut d_model into thinner heads (d_k = 512 / 16 = 32): W_Q, W_K, W_V and "
    "W_O stay 512 × 512, so the attention keeps its 1,050,624 parameters and the FFN holds "
    "twice as many.",
    {"attention": "More heads do not add parameters: each head gets d_k = d_model / h columns, "
                  "so W_Q, W_K, W_V and W_O stay d_model × d_model whatever h (section 2), and "
                  "the FFN's W_1 and W_2 hold twice as much (section 7).",
     "the same": "The attention holds 4·d_model² weights whatever h; the FFN holds "
                 "2·d_model·d_ff = 8·d_model² since d_ff = 4·d_model: twice as many "
                 "(section 7)."},
)


@checker
def check_more_heads(answer_1=None):
    """Question 1: the paper's layer with h = 16: which part holds more parameters?"""
    return choice(answer_1, "answer_1", *_MORE_HEADS)


_PER_POSITION = (
    "layer only",
    "The FFN transforms each position on its own, so token 3's FFN output ignores token 1; "
    "in the layer the attention first mixes every token into every other, so token 3's "
    "output moves.",
    {"neither": "The attention sublayer mixes the tokens: token 3's query reads token 1's key "
                "and value, so the layer's output for token 3 moves when token 1 changes "
                "(section 2).",
     "both": "The FFN is applied to each position on its own: in section 5 token 3 fed alone "
             "gave exactly its row, so changing token 1 cannot move token 3's FFN output.",
     "ffn only": "It is the other way round: the FFN never looks at the other tokens "
                 "(section 5), the attention does (section 2)."},
)


@checker
def check_per_position(answer_2=None):
    """Question 2: what changing token 1 does to token 3's layer output and FFN output."""
    return choice(answer_2, "answer_2", *_PER_POSITION)


# The answer of question 3 lives here, out of the checker's own source (which ?? shows).
_PATH_N, _PATH_WIDTH = 101, 5
_PATH_LAYERS = (_PATH_N - 1) // ((_PATH_WIDTH - 1) // 2)
_PATH_WHY = (f"Each layer reaches (w − 1) / 2 = {(_PATH_WIDTH - 1) // 2} positions further, and from token 1 "
             f"to token {_PATH_N} there are {_PATH_N - 1} positions: {_PATH_N - 1} / "
             f"{(_PATH_WIDTH - 1) // 2} = {_PATH_LAYERS} layers, where one self-attention layer suffices.")


PATH_HINTS = {   # a wrong number of layers -> the idea it misses
    100: "that is one position per layer, the reach of a width-3 kernel (or the recurrent layer's "
         "n − 1 steps): a centred kernel of width 5 reads 2 positions on each side, so each layer "
         "reaches 2 positions further (section 3)",
    99: "a centred kernel of width 5 reaches 2 positions further per layer, not 1, and from token 1 "
        "to token 101 there are 100 positions to cross (section 3)",
    25: "a kernel of width 5 centred on its position reads 2 positions on each side, not 4 behind: "
        "each layer reaches 2 positions further (section 3)",
    20: "n / w is the rough order of growth section 3 gives for plain kernels, not the count: each "
        "layer reaches (w − 1) / 2 = 2 positions further, and there are n − 1 = 100 positions to cross",
    51: "count the positions to cross, n − 1 = 100 (from token 1 to token 101), not the tokens",
    3: "that is for dilated kernels, whose gaps grow 5-fold from layer to layer; a plain kernel "
       "reaches the same 2 positions further in every layer",
    1: "one layer links every pair in self-attention; a convolution layer reads only its window "
       "of 5 positions (section 3)",
}


@checker
def check_path_length(answer_3=None):
    """Question 3: how many layers of centred width-5 convolutions link the first and the last of
    n = 101 tokens."""
    value = number(answer_3, "answer_3")
    if value == _PATH_LAYERS:
        return Passed(_PATH_WHY)
    if value != round(value):
        return ("A number of layers is a whole number: count the positions to cross (n − 1 = 100) "
                "and how far one layer reaches (section 3).")
    if int(value) in PATH_HINTS:
        return _sentence(PATH_HINTS[int(value)]) + "."
    return ("Count the positions between the first and the last token (n − 1 = 100) and how far "
            "one layer of a centred width-5 kernel reaches (section 3's path lengths).")
