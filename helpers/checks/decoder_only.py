"""Checks for notebook 12, one stack instead of two: the prefix LM's mask, and three questions.

The check runs the learner's mask on batches of pairs whose right answer it knows, and recognises a
typical mistake by computing what that mistake returns on the same batches and comparing.
"""

import codecs

import torch

import helpers.decoder_only
from helpers.checks import Hint, Passed, call, checker, choice, exercise, number, plain

NAME = "my_prefix_lm_mask(src_lengths, n, padding)"

# The check's batches: (source lengths, target lengths, n, padded). Row b is `source, <s>, target`,
# padded at the end with PAD to n positions; padded: the padding mask is given, else padding is
# None (every row fills n). Rows of different lengths; a row without padding; a source and a target
# of one piece; n larger than every row; batch sizes other than n (a shape mix-up shows).
BATCHES = (
    ((3, 1, 4, 2), (3, 4, 1, 2), 7, True),
    ((2, 5, 1), (1, 2, 2), 10, True),
    ((1, 3, 4, 2), (4, 2, 1, 3), 6, False),
)

# --- the hints: each named mistake's line -----------------------------------------------------

CAUSAL_OVER_THE_SOURCE = (
    "Causal over the source: your mask is GPT's causal mask, so a source piece does not read the source "
    "pieces after it, nor the separator. In a prefix LM the prefix (the source and <s>, keys 0 to "
    "src_lengths[b]) is read by every query; only the target's future stays hidden.")
TARGET_SEES_ITS_FUTURE = (
    "A target that sees its future: your target positions read every real key, the target pieces "
    "after them included, so the model would read the very piece it is trained to predict. A target "
    "query i may read the prefix and keys j <= i only.")
NOTHING_HIDDEN = (
    "Your mask hides no real key: every position reads the whole pair, so the source reads the target "
    "and each target piece reads the pieces after it, the ones it is trained to predict. Hide key j from "
    "query i when j is after both i and the separator (j > i and j > src_lengths[b]).")
SEPARATOR_BEFORE = (
    "The separator on the wrong side: your prefix ends before <s>, so the source does not read the "
    "separator. <s> sits at position src_lengths[b] and belongs to the prefix: keys j <= src_lengths[b], "
    "not j < src_lengths[b].")
SEPARATOR_AFTER = (
    "The separator on the wrong side: your prefix goes one past <s>, so the source and the separator "
    "read the first target piece, which the separator is trained to predict. The prefix ends at <s>, "
    "position src_lengths[b]: keys j <= src_lengths[b], not j <= src_lengths[b] + 1.")
PADDING_VISIBLE = (
    "Padding left visible: your mask lets the padding positions read the padding keys. With the padding "
    "at the end of each row, the causal part already hides it from the real positions, but not wherever "
    "padding sits (decoding with a cache writes new pieces after a shorter source's padding): hide the "
    "keys where padding is True, for every query, padding[:, None, :], when padding is given.")
PADDING_ON_QUERIES = (
    "The padding is hidden on the queries' axis (rows): a padding row then has no key left to read "
    "(softmax of nothing but -inf gives nan). Hide the padding keys, the columns, for every query: "
    "padding[:, None, :], shape (batch, 1, n).")
INVERTED = (
    "A boolean mask of the wrong polarity (07's inverted mask): yours is True where a query may read a "
    "key. The course's masks are True where a key is hidden: invert it (~) or flip each comparison.")
SWAPPED = (
    "Queries and keys are swapped: your mask is the right one transposed. Row i is the query, column j "
    "the key: mask[b, i, j] says whether query i may not read key j.")
SOURCE_READS_TARGET = (
    "The source reads the target: you opened the prefix's rows (its queries) instead of its columns "
    "(its keys). Every query may read the keys of the prefix, j <= src_lengths[b]; the source's own "
    "queries must still not read the target.")
DIAGONAL = (
    "A target position does not read itself: your mask hides the diagonal for the target (j >= i "
    "instead of j > i). Query i may read key i, as in the causal mask (triu(1), not triu(0)).")
ONE_ROW = (
    "Every row gets one row's source length (or padding): the pairs of a batch have different lengths, "
    "so row b's prefix ends at its own separator, src_lengths[b], and its padding is padding[b]. Use "
    "each row's own, e.g. src_lengths[:, None, None] against the key positions.")

PASSED_WHY = ("Your mask equals the prefix LM's on batches of pairs of different lengths, one wider "
              "than every row and one without padding: the source and the separator read the whole "
              "prefix, each target piece the prefix and its own past, and no query reads a padding key.")


# --- the batches and the masks each mistake makes on them --------------------------------------

def batches():
    """[(src_lengths (batch,) int64, n, padding (batch, n) bool or None, lengths (batch,))]."""
    made = []
    for sources, targets, n, padded in BATCHES:
        src_lengths = torch.tensor(sources)
        lengths = src_lengths + 1 + torch.tensor(targets)            # source, <s>, target
        padding = torch.arange(n)[None, :] >= lengths[:, None] if padded else None
        made.append((src_lengths, n, padding, lengths))
    return made


def _hidden(src_lengths, n, padding, future=None, prefix=None, keys=True):
    """The cells a mask hides: (future & ~prefix) | (padding keys, with keys), (batch, n, n)."""
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    m = src_lengths[:, None, None]
    future = j > i if future is None else future
    prefix = j <= m if prefix is None else prefix
    hidden = (future & ~prefix).expand(len(src_lengths), n, n)
    if keys and padding is not None:
        hidden = hidden | padding[:, None, :]
    return hidden


def right_mask(src_lengths, n, padding):
    """The prefix LM's mask: hidden = (j > i) and (j > src_length), or j is padding."""
    return _hidden(src_lengths, n, padding)


def mistakes(src_lengths, n, padding):
    """(hint, the mask that mistake returns) for every mistake the check names, in order: the same
    entries for every batch (with padding None, a padding mistake returns what it would then)."""
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    m = src_lengths[:, None, None]
    nothing = torch.zeros(n, n, dtype=torch.bool)
    right = right_mask(src_lengths, n, padding)
    out = []
    for keys in (True, False):             # each with the padding hidden, then left visible
        out += [
            (CAUSAL_OVER_THE_SOURCE, _hidden(src_lengths, n, padding, prefix=nothing, keys=keys)),
            (TARGET_SEES_ITS_FUTURE, _hidden(src_lengths, n, padding, future=(i <= m), keys=keys)),
            (NOTHING_HIDDEN, _hidden(src_lengths, n, padding, future=nothing, keys=keys)),
            (SEPARATOR_BEFORE, _hidden(src_lengths, n, padding, prefix=(j < m), keys=keys)),
            (SEPARATOR_AFTER, _hidden(src_lengths, n, padding, prefix=(j <= m + 1), keys=keys)),
            (SOURCE_READS_TARGET, _hidden(src_lengths, n, padding, future=(j > i) & (i > m), prefix=nothing,
                                          keys=keys)),
            (DIAGONAL, _hidden(src_lengths, n, padding, future=(j >= i), keys=keys)),
        ]
        if keys:
            out.append((PADDING_VISIBLE, _hidden(src_lengths, n, padding, keys=False)))
        out.append((INVERTED, ~_hidden(src_lengths, n, padding, keys=keys)))
    queries = padding[:, :, None] if padding is not None else torch.zeros(1, n, 1, dtype=torch.bool)
    out.append((PADDING_ON_QUERIES, _hidden(src_lengths, n, padding, keys=False) | queries))
    out.append((PADDING_ON_QUERIES, right | queries))
    out.append((SWAPPED, right.transpose(1, 2)))
    # one row's source length, or one row's padding, for every row (the same entries in every batch)
    for pick in (0, -1):
        same = src_lengths[pick].expand_as(src_lengths)
        out.append((ONE_ROW, right_mask(same, n, padding)))
        rows = padding[pick].expand_as(padding) if padding is not None else None
        out.append((ONE_ROW, right_mask(src_lengths, n, rows)))
    for same in (src_lengths.max(), src_lengths.min()):
        out.append((ONE_ROW, right_mask(same.expand_as(src_lengths), n, padding)))
    return out


# --- what the learner returned ------------------------------------------------------------------

def _mask(out, batch, n):
    """The learner's mask as a (batch, n, n) boolean tensor, or raise Hint naming what is wrong."""
    if isinstance(out, (tuple, list)):
        raise Hint(f"my_prefix_lm_mask should return one tensor, got a {type(out).__name__}: build the "
                   "mask as a tensor (torch.stack joins a list of per-row masks).")
    if not isinstance(out, torch.Tensor):
        raise Hint(f"my_prefix_lm_mask should return a torch tensor, got {type(out).__name__}.")
    shape = tuple(out.shape)
    if shape != (batch, n, n):
        if shape == (n, n):
            raise Hint(f"Your mask has shape (n, n) = {shape}, one mask for the whole batch: each row has "
                       "its own source length and padding, so the mask is (batch, n, n), one (n, n) grid "
                       "of queries × keys per row.")
        if shape == (batch, 1, n, n):
            raise Hint(f"Your mask has a head axis, {shape}: return (batch, n, n) as the course's masks "
                       "of this notebook do (the model adds the head axis itself).")
        raise Hint(f"Your mask should have shape (batch, n, n), one (n, n) grid of queries × keys per row; "
                   f"got {shape} for a batch of {batch} rows of width n = {n}.")
    if out.dtype != torch.bool:
        if out.is_floating_point() and bool((out == float("-inf")).any()):
            raise Hint("An additive mask (0 and -inf) where a boolean one is asked: return True where a "
                       "key is hidden and False where it may be read (the model places the -inf itself).")
        raise Hint(f"Your mask is {str(out.dtype).removeprefix('torch.')}: return booleans (torch.bool), "
                   "True where a key is hidden; comparisons such as j > i give them, and .bool() turns "
                   "0 and 1 into them.")
    return out


def _kind(position, m, length):
    if position < m:
        return "source"
    if position == m:
        return "separator"
    return "target" if position < length else "padding"


def _where(got, right, cases):
    """The kind of query and key (source, separator, target, padding) of the first cell that differs."""
    for mask, want, (src_lengths, _, _, lengths) in zip(got, right, cases, strict=True):
        cells = (mask != want).nonzero()
        if len(cells):
            b, i, j = cells[0].tolist()
            m, length = int(src_lengths[b]), int(lengths[b])
            return _kind(i, m, length), _kind(j, m, length)
    return None


@checker
def check_prefix_lm_mask(fn):
    """my_prefix_lm_mask(src_lengths, n, padding) against the prefix LM's mask, on batches of pairs of
    different lengths (padding given, or None)."""
    reference = [(helpers.decoder_only, "prefix_lm_mask", "helpers.decoder_only.prefix_lm_mask")]
    instead = ("compare the key positions j with the query positions i and with src_lengths, then hide "
               "the padding keys, with tensor operations.")
    cases, got = batches(), []
    for src_lengths, n, padding, _ in cases:
        try:
            out = call(fn, NAME, src_lengths, n, padding, reference=reference, instead=instead)
        except Hint as h:
            if padding is None and " raised " in str(h):
                raise Hint(f"{str(h).rstrip('.')}, with padding None: padding may be None (a batch "
                           "without padding), so hide the padding keys only when it is given (if padding "
                           "is not None: ...).") from None
            raise
        got.append(_mask(out, len(src_lengths), n))
    right = [right_mask(s, n, p) for s, n, p, _ in cases]
    if all(torch.equal(g, r) for g, r in zip(got, right, strict=True)):
        return Passed(PASSED_WHY)
    per_batch = [mistakes(s, n, p) for s, n, p, _ in cases]
    for k, (hint, _) in enumerate(per_batch[0]):
        if all(torch.equal(g, made[k][1]) for g, made in zip(got, per_batch, strict=True)):
            return hint
    query, key = _where(got, right, cases)
    return (f"Not this mask yet: what a {query} query may read of the {key} keys differs from the rules. "
            "Hide key j from query i when j > i and j > src_lengths[b] (after the separator), and when "
            "key j is padding; True where hidden, shape (batch, n, n).")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_prefix_lm_mask, helpers.decoder_only.prefix_lm_mask,
         lambda f: lambda src_lengths, n, padding=None: f(src_lengths, n, padding))


# --- Check your understanding ---------------------------------------------------------------------

# The questions' answers, explanations and hints are written in rot13 (helpers.checks.plain reads
# them): the answers stay out of sight for a learner reading this module.

# Question 1: a pair of Q1_SOURCE source pieces and Q1_TARGET target pieces, as `source, <s>, target`.
Q1_SOURCE, Q1_TARGET = 5, 3


def _visible(hidden):
    return int((~hidden).sum())


def _q1_values():
    """The right count and each typical mistake's, computed from the masks themselves."""
    s, n = Q1_SOURCE, Q1_SOURCE + 1 + Q1_TARGET
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    right = _visible(helpers.decoder_only.prefix_lm_mask(torch.tensor([s]), n)[0])
    mistakes = {
        _visible(helpers.decoder_only.causal_lm_mask(n)):
            "That is the causal mask's count: in the prefix LM the source also reads the source after it "
            "and the separator.",
        n * n: "That leaves every pair visible: the target must not read its future.",
        _visible((j > i) & (j >= s)):
            "Your prefix stops before the separator: <s> belongs to the prefix, which every query reads.",
        (s + 1) ** 2: "That counts the prefix's own block only: the target's queries read keys too (the "
                      "prefix and their own past).",
        _visible((j >= i) & (j > s)):
            "A target query reads itself too (j <= i), as in every causal mask.",
        n * n - right: "That counts the hidden pairs; the question asks for the visible ones.",
    }
    mistakes.pop(right, None)
    return right, mistakes


_VISIBLE_WHY = codecs.decode(
    'Gur 6 cersvk ebjf ernq gur 6 cersvk xrlf (36), naq gur 3 gne'
    'trg ebjf ernq gur cersvk naq gurve cnfg (7 + 8 + 9 = 24).', "rot13")


@checker
def check_visible_question(answer):
    """How many (query, key) pairs the prefix mask leaves visible for a 5-piece source, 3-piece target."""
    value = number(answer, "answer_1")
    right, mistakes = _q1_values()
    if value == right:
        return Passed(_VISIBLE_WHY)
    for wrong, hint in mistakes.items():
        if value == wrong:
            return hint
    return ("Count row by row: a query in the prefix (the source and <s>) reads every prefix key; a target "
            "query reads the prefix and the target up to itself.")


_COST_QUESTION = plain(dict(
    right='rirel oybpx ernqf obgu',
    why='Rirel oybpx bs gur qrpbqre-bayl zbqry ernqf gur jubyr frdhrapr, Ratyvfu naq Serapu, jurer rnpu '
        'fgnpx bs gur rapbqre-qrpbqre ernqf bar fvqr: jvgu gur fnzr cnenzrgref, nobhg 1.75 gvzrf gur '
        'SYBCf cre cnve, naq 1.7 gvzrf gur gvzr cre fgrc urer.',
    wrong={
        'zber cnenzrgref':
            'Gur gjb zbqryf jrer zngpurq ba cnenzrgref: 924,672 ntnvafg 925,696 bhgfvqr gur rzorqqvat '
            '(frpgvba 3). Gur pbfg pbzrf sebz jung rnpu oybpx ernqf.',
        'gur cersvk znfx':
            'N znfx uvqrf fpberf nsgre gurl ner pbzchgrq; gur pnhfny YZ, jvgu nabgure znfx, pbfgf nobhg nf '
            'zhpu cre fgrc (frpgvba 5). Gur pbfg pbzrf sebz jung rnpu oybpx ernqf.',
        'n ynetre ibpnohynel':
            "Obgu zbqryf hfr abgrobbx 11'f 2,102 cvrprf naq gur fnzr gvrq rzorqqvat (frpgvba 1). Gur pbfg "
            "pbzrf sebz jung rnpu oybpx ernqf.",
    },
))


@checker
def check_cost_question(answer):
    """Why one stack at equal parameters costs more per training step."""
    return choice(answer, "answer_2", **_COST_QUESTION)


_SHARE_QUESTION = plain(dict(
    right='zber xrlf gb funer',
    why='Ng gnetrg cbfvgvba g n dhrel frrf f fbhepr cvrprf, gur frcnengbe naq g gnetrg cvrprf; vgf '
        'jrvtugf fhz gb 1, fb n ernqvat gung fcernqf rirayl tvirf gur fbhepr f / (f + 1 + g), juvpu '
        'snyyf nf g tebjf. Snqvat zrnaf snyyvat orybj gung yvar.',
    wrong={
        'gur pnpur qebcf gur fbhepr':
            'Gur pnpur xrrcf rirel xrl bs gur fbhepr sbe gur jubyr qrpbqvat (frpgvba 5); gur funerf va '
            'frpgvba 6 ner rira zrnfherq jvgubhg n pnpur, grnpure sbeprq.',
        'cbfvgvbaf erfgneg':
            'Cbfvgvbaf pbagvahr sebz gur fbhepr vagb gur gnetrg urer (frpgvba 1), naq gur havsbez funer '
            'qbrf abg qrcraq ba cbfvgvbaf ng nyy: pbhag gur xrlf n dhrel frrf.',
        'qebcbhg':
            'Gur funerf ner zrnfherq va riny zbqr, jvgu ab qebcbhg; pbhag gur xrlf n dhrel ng cbfvgvba g '
            'frrf.',
    },
))


@checker
def check_share_question(answer):
    """Why the share of attention on the source falls along the output even for an even reading."""
    return choice(answer, "answer_3", **_SHARE_QUESTION)
