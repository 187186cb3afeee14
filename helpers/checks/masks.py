"""Checks for notebook 07, masks and the shuffle test.

Each exercise check runs the learner's function on cases whose right answer it knows, and
recognises a typical mistake by running that mistake on the same cases and comparing.
"""

import functools
import math

import torch
from torch import nn

import helpers.attention
from helpers.attention import causal_mask, padding_mask
from helpers.checks import Hint, Passed, call, checker, choice, exercise, not_answered, shape
from helpers.tasks.tickets import PAD

# A finite score at or below this hides a key as well as -inf does: e^(-1e4) is 0 in float32.
LARGE_NEGATIVE = -1e4
# e^x is exactly 0 in float32 from here down (e^-104 rounds to 0; the smallest float32 is e^-103.3).
FLOAT32_ZERO = -104.0


def _large_negative_works(value):
    """The Passed text for a mask that hides with the finite number value (at most LARGE_NEGATIVE)."""
    return (f"You used a large negative number, {value:g}, instead of -inf: that works in practice "
            f"(e^({value:g}) is exactly 0 in float32, which reaches down to about e^(-103), so hidden "
            "keys get weight 0). -inf is PyTorch's convention (generate_square_subsequent_mask); the "
            "two differ only on a row whose keys are all hidden, which gets equal weights instead of nan.")


def _one_thread(check):
    """Run a check on one thread (its tensors are tiny: more threads only wait for a busy core)
    and give the learner back their random state (dropout draws in the test models)."""
    @functools.wraps(check)
    def run(*args, **kwargs):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.random.fork_rng():
                return check(*args, **kwargs)
        finally:
            torch.set_num_threads(threads)
    return run


def _as_bool(x, name):
    """A learner's True/False (a Python bool, or a one-element boolean tensor), or raise Hint."""
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bool and x.numel() == 1:
            return bool(x)
        raise Hint(f"{name} should return one True or False, got a tensor of shape {tuple(x.shape)} "
                   f"and dtype {x.dtype}: == compares element by element, torch.allclose(a, b) "
                   "answers once for the whole tensor.")
    if type(x).__name__ in ("bool", "bool_"):
        return bool(x)
    raise Hint(f"{name} should return True or False, got {type(x).__name__}.")


def _pattern_hint(got, cases, right, mistakes, name):
    """Compare a learner's answers on every case with the right ones and each mistake's.

    cases: the label of each case; right: the right answer on each; mistakes: (hint, answers)
    pairs, answers computed by running that mistake on the same cases. None when right.
    """
    if got == right:
        return None
    for hint, answers in mistakes:
        if got == answers:
            return hint
    first = next(i for i, (g, r) in enumerate(zip(got, right, strict=True)) if g != r)
    return f"Not yet: on {cases[first]}, {name} answers {got[first]}, the right answer is {right[first]}."


# --- Your turn 1: the shuffle test ---------------------------------------------------------------

BATCH, N_TOKENS, D = 2, 5, 3   # d < n and batch < n: reordering another axis by rho fails at once


def _attend(x, pe=None, causal=False):
    """One head of self-attention on x (batch, n, d) with fixed weights, computed in float64 and
    returned in float32: reordering the tokens then reorders the outputs bit for bit."""
    g = torch.Generator().manual_seed(7)
    w_q, w_k, w_v = (torch.randn(D, D, generator=g, dtype=torch.float64) for _ in range(3))
    h = x.double() if pe is None else x.double() + pe.double()
    scores = (h @ w_q) @ (h @ w_k).transpose(-2, -1) / math.sqrt(D)
    if causal:
        scores = scores.masked_fill(causal_mask(h.shape[1]), float("-inf"))
    return (torch.softmax(scores, dim=-1) @ (h @ w_v)).float()


def _shuffle_cases():
    """(label, f, x, rho): functions that are order-blind (True) or not, and one that is order-blind
    up to float rounding (its outputs differ from the reordered ones in the 7th digit)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(BATCH, N_TOKENS, D, generator=g)
    pe = torch.randn(1, N_TOKENS, D, generator=g)
    w = torch.randn(D, D, generator=g)
    small_pe = 3e-4 * pe                 # moves the outputs by up to 0.004: a loose tolerance misses it
    centred_pe = pe - pe.mean(1, keepdim=True)      # adds 0 to the mean over the tokens
    cycle, swap = [1, 2, 3, 4, 0], [1, 0, 2, 3, 4]
    step = 1 + 1.2e-7 * torch.arange(1, N_TOKENS + 1).view(1, -1, 1)   # 1, 2, ... float32 steps above 1
    # a batch whose first (then last) sequence repeats one token: reordering that sequence changes
    # nothing, so only the other sequence shows that reversing the tokens is not order-blind
    first_flat, last_flat = x.clone(), x.clone()
    first_flat[0], last_flat[-1] = x[0, :1].expand(N_TOKENS, D), x[-1, :1].expand(N_TOKENS, D)
    return [
        ("self-attention without positions, the tokens moved round a cycle", _attend, x, cycle),
        ("self-attention without positions, two tokens swapped", _attend, x, swap),
        ("self-attention with position vectors added", lambda t: _attend(t, pe=pe), x, cycle),
        ("self-attention with a causal mask", lambda t: _attend(t, causal=True), x, cycle),
        ("self-attention with a float rounding error in the 7th digit",
         lambda t: _attend(t) * step, x, cycle),
        ("a function that reverses the tokens (t.flip(1))", lambda t: t.flip(1), x, cycle),
        ("a function that reverses the tokens, on a batch whose first sequence repeats one token",
         lambda t: t.flip(1), first_flat, cycle),
        ("a function that reverses the tokens, on a batch whose last sequence repeats one token",
         lambda t: t.flip(1), last_flat, cycle),
        ("a feed-forward layer applied to each token on its own", lambda t: torch.relu(t @ w), x, cycle),
        ("a function that gives every token the mean of all tokens",
         lambda t: t.double().mean(1, keepdim=True).expand_as(t).float(), x, cycle),
        ("self-attention with tiny position vectors added (outputs move by up to 0.004)",
         lambda t: _attend(t, pe=small_pe), x, cycle),
        ("a function that adds position vectors to the tokens (no attention)",
         lambda t: t + centred_pe, x, cycle),
    ]


def _right_shuffle_test(f, x, rho):
    return torch.allclose(f(x[:, rho]), f(x)[:, rho], atol=1e-5)


LOOSE_HINT = ("Your tolerance is too loose: self-attention with tiny position vectors added, whose "
              "outputs move by up to 0.004 when the tokens move, is not order-blind, yet passes a "
              "tolerance of 0.01 or more. Float rounding is about 1e-7 here: torch.allclose(..., "
              "atol=1e-5).")

SHUFFLE_MISTAKES = (
    ("Reorder both sides: f of the shuffled tokens, f(x[:, rho]), against f's outputs on x reordered "
     "the same way, f(x)[:, rho]. Your test compares a shuffled sequence with an unshuffled one, so "
     "even attention without positions fails it.",
     lambda f, x, rho: torch.allclose(f(x[:, rho]), f(x), atol=1e-5)),
    ("Your test reorders f(x) with the inverse permutation: it passes when two tokens are swapped "
     "(a swap is its own inverse) but not when they move round a cycle. Reorder the outputs with "
     "the same rho as the inputs: f(x)[:, rho].",
     lambda f, x, rho: torch.allclose(f(x[:, rho]), f(x)[:, torch.tensor(rho).argsort()], atol=1e-5)),
    ("Your test asks for bit-for-bit equality: a float rounding difference in the 7th digit makes it "
     "fail, and sums taken in another order differ in their last digits. Compare with a tolerance: "
     "torch.allclose(..., atol=1e-5).",
     lambda f, x, rho: torch.equal(f(x[:, rho]), f(x)[:, rho])),
    ("Your test compares the means over the tokens: reversing the tokens keeps the mean, yet the "
     "reversed output of each token depends on where it stands. Compare the outputs token by token.",
     lambda f, x, rho: torch.allclose(f(x[:, rho]).mean(1), f(x).mean(1), atol=1e-5)),
    ("Your test compares sorted outputs: sorting forgets which token each output belongs to, so "
     "reversing the tokens, or adding position vectors, passes. Reorder the outputs with rho instead "
     "and compare them token by token: f(x[:, rho]) against f(x)[:, rho].",
     lambda f, x, rho: torch.allclose(f(x[:, rho]).sort(1).values, f(x).sort(1).values, atol=1e-5)),
    ("Your test looks at one sequence of the batch only: x holds several sequences, and a function can "
     "be order-blind on one of them (a sequence that repeats one token) and not on another. Compare "
     "every sequence: f(x[:, rho]) against f(x)[:, rho].",
     lambda f, x, rho: torch.allclose(f(x[:1, rho]), f(x[:1])[:, rho], atol=1e-5)),
    ("Your test looks at one sequence of the batch only: x holds several sequences, and a function can "
     "be order-blind on one of them (a sequence that repeats one token) and not on another. Compare "
     "every sequence: f(x[:, rho]) against f(x)[:, rho].",
     lambda f, x, rho: torch.allclose(f(x[-1:, rho]), f(x[-1:])[:, rho], atol=1e-5)),
    *((LOOSE_HINT, lambda f, x, rho, atol=atol: torch.allclose(f(x[:, rho]), f(x)[:, rho], atol=atol))
      for atol in (1e-2, 1e-1, 1.0)),
    ("Your test answers the opposite question: it should return True when f is order-blind (the "
     "outputs of the shuffled tokens are the old outputs, reordered) and False otherwise.",
     lambda f, x, rho: not _right_shuffle_test(f, x, rho)),
)


def _axis_hint(hint):
    """A clearer hint for an IndexError from reordering the wrong axis of x (batch, n, d)."""
    text = str(hint)
    if "IndexError" in text and f"with size {BATCH}" in text:
        return ("x has shape (batch, n, d): x[rho] reorders the batch axis. Reorder the tokens, "
                "axis 1: x[:, rho] (and f(x)[:, rho]).")
    if "IndexError" in text and f"with size {D}" in text:
        return ("x has shape (batch, n, d): x[..., rho] reorders the d numbers of each token. Reorder "
                "the tokens, axis 1: x[:, rho] (and f(x)[:, rho]).")
    return text


@checker
@_one_thread
def check_shuffle_test(fn):
    """shuffle_test(f, x, rho): True when f(x[:, rho]) equals f(x)[:, rho] within rounding."""
    name = "shuffle_test(f, x, rho)"
    cases = _shuffle_cases()
    got = []
    for _, f, x, rho in cases:
        try:
            out = call(fn, name, f, x, list(rho))
        except Hint as h:
            raise Hint(_axis_hint(h)) from None
        got.append(_as_bool(out, "shuffle_test"))
    labels = [label for label, *_ in cases]
    right = [_right_shuffle_test(f, x, rho) for _, f, x, rho in cases]
    mistakes = [(hint, [bool(m(f, x, rho)) for _, f, x, rho in cases]) for hint, m in SHUFFLE_MISTAKES]
    hint = _pattern_hint(got, labels, right, mistakes, "your shuffle_test")
    if hint is None:
        return Passed("Your test says True for self-attention without positions and for a "
                      "feed-forward layer (order-blind: Attention(X_ρ) = Attention(X)_ρ), and False "
                      "with position vectors, with a causal mask and for reversing the tokens.")
    return hint


# --- Your turn 2: a learned position table -------------------------------------------------------

MAX_LEN, D_MODEL = 10, 6


def _tensors_of(module):
    """Tensors kept as plain attributes or buffers of a module (not parameters)."""
    found = [v for v in vars(module).values() if isinstance(v, torch.Tensor)
             and not isinstance(v, nn.Parameter)]
    return found + list(module.buffers())


@checker
@_one_thread
def check_learned_positions(cls):
    """LearnedPositions(max_len, d_model): x (batch, n, d_model) -> x + PE[start : start + n],
    PE a trained (max_len, d_model) table."""
    if cls is None or cls is Ellipsis:
        return "Not answered yet: write the class LearnedPositions and run its cell."
    if not isinstance(cls, type):
        return (f"Pass the class itself (LearnedPositions, without parentheses), not a "
                f"{type(cls).__name__}.")
    if not issubclass(cls, nn.Module):
        return "LearnedPositions should be an nn.Module: class LearnedPositions(nn.Module)."
    if not_answered(getattr(cls, "forward", None)) or not_answered(cls.__init__):
        return "Not answered yet: write __init__ and forward of LearnedPositions and run its cell."
    try:
        torch.manual_seed(0)
        module = cls(MAX_LEN, D_MODEL)
    except Exception as e:  # the learner's constructor may fail in any way: say how
        message = " ".join(str(e).split())[:160]
        return f"LearnedPositions({MAX_LEN}, {D_MODEL}) raised {type(e).__name__}: {message}"
    params = list(module.parameters())
    if not params:
        if any(t.numel() == MAX_LEN * D_MODEL for t in _tensors_of(module)):
            return ("Your table is a plain tensor (or a buffer): module.parameters() does not list it, "
                    "so training never changes it. Wrap it in nn.Parameter, or use "
                    "nn.Embedding(max_len, d_model).")
        return ("LearnedPositions has no parameter: a learned table is trained like a weight "
                "(nn.Embedding(max_len, d_model) or nn.Parameter); fixed sinusoids are not learned.")
    total = sum(p.numel() for p in params)
    if total != MAX_LEN * D_MODEL:
        return (f"LearnedPositions({MAX_LEN}, {D_MODEL}) has {total} learned numbers: the table has "
                f"one row of d_model numbers per position, max_len × d_model = {MAX_LEN * D_MODEL}.")
    table = params[0]
    g = torch.Generator().manual_seed(1)
    pe = torch.randn(MAX_LEN, D_MODEL, generator=g)
    with torch.no_grad():
        if tuple(table.shape) == (D_MODEL, MAX_LEN):
            table.copy_(pe.T)
        else:
            table.copy_(pe.reshape(table.shape))
    x = torch.randn(2, 4, D_MODEL, generator=g)
    label = f"LearnedPositions({MAX_LEN}, {D_MODEL})"
    for start in (0, 3, 6):
        out = call(lambda t, s: module(t, start=s), f"{label}(x, start={start})", x, start, no_grad=False)
        if not isinstance(out, torch.Tensor):
            return f"{label}(x, start=...) should return a tensor, got {type(out).__name__}."
        if tuple(out.shape) != tuple(x.shape):
            return (f"{label}(x) should keep the shape of x, (batch, n, d_model) = {tuple(x.shape)}; "
                    f"got {tuple(out.shape)}.")
        if not out.is_floating_point():
            return f"{label}(x) returned dtype {out.dtype}: add the float rows of the table to x."
        rows = pe[start:start + 4]
        want = x + rows
        got = out.detach().float()
        if torch.allclose(got, want, atol=1e-5):
            continue
        if start and torch.allclose(got, x + pe[:4], atol=1e-5):
            return ("forward ignores start: with start = 3 the first token gets row 3 of the table "
                    "(as if 3 tokens came before it), not row 0.")
        if torch.allclose(got, x + pe[start + 1:start + 5], atol=1e-5):
            return "Off by one: positions count from 0, so a text with start = 0 gets rows 0, 1, 2, ..."
        if torch.allclose(got, x * rows, atol=1e-5):
            return "Add the position vector to the token's vector, x + PE[i]: you multiplied them."
        if torch.allclose(got, rows.expand_as(x), atol=1e-5):
            return "Return x plus the rows: you returned the position vectors alone."
        if torch.allclose(got, x, atol=1e-5):
            return "forward returns x unchanged: add the rows start, ..., start + n − 1 of the table."
        if torch.allclose(got, x + pe[start], atol=1e-5):
            return ("Every token got the same row: token i of the text gets row start + i, one row per "
                    "position.")
        return (f"Not yet: {label}(x, start={start}) should be x + rows {start} to {start + 3} of the "
                "table, one row per token.")
    out = call(lambda t: module(t), f"{label}(x)", x, no_grad=False)
    if not (isinstance(out, torch.Tensor) and torch.allclose(out.detach().float(), x + pe[:4], atol=1e-5)):
        return "Without start, forward should begin at position 0 (def forward(self, x, start=0))."
    module.zero_grad()
    out = module(x, start=3)
    if not out.requires_grad:
        return ("No gradient reaches the table (torch.no_grad, .data or .detach() in forward): "
                "training could not change it.")
    out.sum().backward()
    if table.grad is None or not torch.any(table.grad != 0):
        return "No gradient reaches the table: training could not change it."
    return Passed(f"The table holds {MAX_LEN} × {D_MODEL} = {MAX_LEN * D_MODEL} trained numbers; a text "
                  "starting at position k gets rows k, k + 1, ..., and the gradient reaches them.")


# --- Your turn 3: the alone-vs-padded test -------------------------------------------------------

TICKET = torch.tensor([[5, 9, 3, 7, 8, 2]])     # one ticket of 6 real tokens
WIDTH = 10                                       # padded to 10: 4 padding tokens


class _Net(nn.Module):
    """A small ticket classifier that treats the padding in one way (kind), right or wrong."""

    def __init__(self, kind):
        super().__init__()
        from helpers.tasks.classifier import TicketClassifier   # here: helpers.tasks.classifier imports tqdm
        with torch.random.fork_rng():
            torch.manual_seed(11)
            self.net = TicketClassifier(20, d_model=16, h=2, d_ff=32, n_layers=1, max_len=16)
            with torch.no_grad():
                for p in self.net.parameters():           # off the initial values (γ = 1, biases 0)
                    p.add_(0.3 * torch.randn_like(p))
                if kind == "no positions":
                    self.net.position.weight.zero_()
        self.kind = kind
        self.train(kind == "training mode")

    def forward(self, ids):
        net, kind = self.net, self.kind
        n_pad = (ids == PAD).sum(1, keepdim=True).float()
        if kind == "no mask":
            return net(ids, key_mask=None)
        if kind == "inverted mask":
            return net(ids, key_mask=ids != PAD)
        if kind == "mean with padding":
            h = net.embed(ids) + net.position(torch.arange(ids.shape[1]))
            h = net.blocks[0](h, helpers.attention.additive_mask(padding=padding_mask(ids, PAD)))
            return net.out(net.norm(h).mean(1))
        if kind == "same team":        # every score moves by the same amount: the best team stays
            return net(ids) + 0.5 * n_pad
        if kind == "other team":       # the padding pushes one team far up
            return net(ids) + 100.0 * n_pad * torch.tensor([0.0, 0, 0, 0, 1])
        if kind == "rounding":         # the same scores up to float rounding (the 7th digit)
            return net(ids) * (1 + 1e-7 * n_pad)
        if kind == "small leak":       # the padding moves two scores by 0.001: a loose tolerance misses it
            return net(ids) + 2.5e-4 * n_pad * torch.tensor([1.0, -1, 0, 0, 0])
        if kind == "loser moves":      # the padding pushes the lowest score 5 further down: the best stays
            scores = net(ids)
            return scores - 1.25 * n_pad * nn.functional.one_hot(scores.argmin(1), scores.shape[1])
        if kind == "first token":      # reads only the first token: padding at the end changes nothing
            return net.out(net.embed(ids[:, 0]) + net.position.weight[0])
        if kind == "sum of real tokens":   # one by one: each padding token adds an exact 0
            total = torch.zeros(ids.shape[0], net.embed.embedding_dim)
            for j in range(ids.shape[1]):
                total = total + net.embed(ids[:, j]) * (ids[:, j] != PAD).float()[:, None]
            return net.out(total)
        return net(ids)


NET_KINDS = {
    "right mask": "a model with the right padding mask",
    "training mode": "the same model in training mode (dropout on)",
    "no mask": "a model without a padding mask",
    "mean with padding": "a model whose mean counts the padding rows",
    "same team": "a model whose five scores all move with the padding (its best team stays)",
    "other team": "a model whose padding pushes one team up",
    "rounding": "a model whose padded scores differ in the 7th digit only (float rounding)",
    "small leak": "a model whose padding moves two of its scores by 0.001",
    "loser moves": "a model whose padding pushes its lowest score 5 further down (its best team stays)",
    "no positions": "a model with the right mask and no position table",
    "inverted mask": "a model with the inverted mask",
    "first token": "a model that reads only the first token",
    "sum of real tokens": "a model that adds up the vectors of the real tokens",
}


def _padded(ids, width, value=PAD, front=False):
    fill = torch.full((ids.shape[0], width - ids.shape[1]), value, dtype=ids.dtype)
    return torch.cat([fill, ids] if front else [ids, fill], dim=1)


def _right_alone_vs_padded(net, ids, width):
    net.eval()
    with torch.no_grad():
        return torch.allclose(net(ids), net(_padded(ids, width)), atol=1e-5)


def _scores(net, ids, width, front=False, value=PAD, train=False):
    if not train:
        net.eval()
    with torch.no_grad():
        return net(ids), net(_padded(ids, width, value, front))


def _trimmed(net, ids, width):
    from helpers.tasks.classifier import predict
    return torch.allclose(predict(net, ids), predict(net, _padded(ids, width)), atol=1e-5)


ALONE_LOOSE_HINT = ("Your tolerance is too loose: a model whose padding moves two of its scores by 0.001 (a "
                    "mask that leaks a little), or all of them by 2, is not padding-blind, yet passes. "
                    "Float rounding is about 1e-7 here: torch.allclose(..., atol=1e-5).")

ALONE_MISTAKES = (
    *((ALONE_LOOSE_HINT, lambda net, ids, w, atol=atol: torch.allclose(*_scores(net, ids, w), atol=atol))
      for atol in (1e-2, 0.1, 0.5, 1.0, 3.0)),
    ("Your test pads the ticket at the start: that moves its tokens along the learned position table, "
     "so even a model with the right mask gives other scores. Pad at the end, as token_ids does.",
     lambda net, ids, w: torch.allclose(*_scores(net, ids, w, front=True), atol=1e-5)),
    ("Your test pads with another id than PAD: the model then reads those tokens as words. Fill the "
     "padding with PAD (0), the id the mask hides.",
     lambda net, ids, w: torch.allclose(*_scores(net, ids, w, value=PAD + 1), atol=1e-5)),
    ("Your test leaves the model in training mode: dropout draws new zeros at every call, so even a "
     "right mask gives two sets of scores. Call net.eval() first (predict does the same).",
     lambda net, ids, w: torch.allclose(*_scores(net, ids, w, train=True), atol=1e-5)),
    ("Your test compares only the winning team: a model can keep its team while every score moves "
     "with the padding (section 6). Compare the five scores, with torch.allclose.",
     lambda net, ids, w: bool((lambda a, b: torch.equal(a.argmax(1), b.argmax(1)))(*_scores(net, ids, w)))),
    ("Your test asks for bit-for-bit equality: scores that differ in the 7th digit only, as float "
     "rounding makes them, fail it. Compare with a tolerance: torch.allclose(..., atol=1e-5).",
     lambda net, ids, w: torch.equal(*_scores(net, ids, w))),
    ("Your test says True even for a model that reads the padding: the padded ticket seems to lose "
     "its padding on the way (predict and trim drop the columns that are padding in every row). Run "
     "net itself on the padded ticket.",
     _trimmed),
    ("Your test answers the opposite question: True must mean that the padded ticket gets the scores "
     "it gets alone.",
     lambda net, ids, w: not _right_alone_vs_padded(net, ids, w)),
)


_EXPECTED = {}


def _alone_expected():
    """The right answers on the test models, and each mistake's (computed once)."""
    if "alone" not in _EXPECTED:
        right = [_right_alone_vs_padded(_Net(kind), TICKET, WIDTH) for kind in NET_KINDS]
        mistakes = [(hint, [bool(m(_Net(kind), TICKET, WIDTH)) for kind in NET_KINDS])
                    for hint, m in ALONE_MISTAKES]
        _EXPECTED["alone"] = right, mistakes
    return _EXPECTED["alone"]


@checker
@_one_thread
def check_alone_vs_padded(fn):
    """alone_vs_padded(net, ids, width): True when net scores the ticket ids (1, n) padded at the
    end with PAD to width tokens as it scores it alone."""
    name = "alone_vs_padded(net, ids, width)"
    got = []
    for kind in NET_KINDS:
        try:
            out = call(fn, name, _Net(kind), TICKET, WIDTH)
        except Hint as h:
            if "IndexError" in str(h) and "index out of range" in str(h):
                raise Hint(f"{h} Pad to width tokens (here {WIDTH}): the test model's position table "
                           "has 16 rows.") from None
            raise
        got.append(_as_bool(out, "alone_vs_padded"))
    right, mistakes = _alone_expected()
    hint = _pattern_hint(got, list(NET_KINDS.values()), right, mistakes, "your alone_vs_padded")
    if hint is None:
        return Passed("Your test passes a right mask (in training mode too, without a position table, "
                      "up to float rounding) and fails no mask, the inverted mask, a mean that counts "
                      "the padding, and scores that move while the best team stays.")
    return hint


# --- Your turn 4: the decoder's mask for a padded batch: causal + padding, additive --------------

HEADS = 4   # the mask must broadcast to (batch, HEADS, n, n)
DECODER_BATCHES = ((3, 6, 0, "end"), (5, 9, 0, "end"), (3, 7, 0, "start"), (2, 7, 7, "end"))


def padded_batch(seed, batch, n, pad, side="end"):
    """(batch, n) random token ids, none equal to pad, padded with pad at the end (or the start):
    one row full, one with two padding tokens, the others of random lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 30, (batch, n), generator=g)
    ids[ids == pad] = pad + 1
    lengths = torch.randint(2, n, (batch,), generator=g)
    lengths[0], lengths[1] = n, n - 2
    for row, length in zip(ids, lengths.tolist(), strict=True):
        if side == "end":
            row[length:] = pad
        else:
            row[:n - length] = pad
    return ids


def _right_decoder_cells(ids, pad):
    return causal_mask(ids.shape[1]) | padding_mask(ids, pad)[:, None, None, :]


def decoder_mask_mistakes(ids, pad):
    """(hint, the boolean 'hidden' pattern of shape (batch, 1, n, n) that mistake gives)."""
    n = ids.shape[1]
    future = causal_mask(n)
    keys = padding_mask(ids, pad)[:, None, None, :]
    queries = padding_mask(ids, pad)[:, None, :, None]
    right = future | keys
    yield ("Inverted mask: it hides what a query may read (its own past and the real tokens) and "
           "shows the future and the padding. True/-inf marks the cells to hide.", ~right)
    yield ("The padding part is inverted: ids != pad marks the real tokens, so they are hidden and "
           "the padding is read. Hide the keys where ids == pad.", future | ~keys)
    yield ("The triangle is on the wrong side: you hide the past (below the diagonal). Hide the "
           "future, the keys j > i: triu(1).", future.T | keys)
    yield ("The triangle is inverted: you hide the past and the diagonal and show the future. "
           "Hide the keys j > i: triu(1).", ~future | keys)
    yield ("The diagonal is hidden too: a token must be able to read itself (triu(1), not "
           "triu(0)); the first token would have nothing left to read.",
           torch.ones(n, n, dtype=torch.bool).triu(0) | keys)
    yield ("Padding applied to the queries instead of the keys: the mask must hide padding "
           "*columns* (keys), shape (batch, 1, 1, n); with the padding at the start, the real tokens "
           "still read it.", future | queries)
    yield ("Padding hidden on both axes: hide only the padding keys (columns, shape (batch, 1, 1, n)); "
           "the extra rows you hide are the padding's own queries, and a padding row at the end then "
           "has no key left (nan).", future | queries | keys)
    yield ("The padding is missing: this is the causal mask alone. With the padding at the start the "
           "real tokens read it; also hide the keys where ids == pad, for every query.",
           future.expand_as(right))
    yield ("The causal part is missing: this is the padding mask alone. Also hide the future, "
           "the keys j > i (triu(1)).", keys.expand_as(right))
    yield ("Right when the padding id is 0, wrong with pad = 7: compare ids with the pad argument "
           "(ids == pad), not with PAD or 0.", _right_decoder_cells(ids, 0))


def _as_tensor(mask, name):
    if mask is None or mask is Ellipsis:
        raise Hint(f"Not answered yet: {name} is still the placeholder.")
    if isinstance(mask, (tuple, list)):
        raise Hint(f"{name} should return one tensor, got a {type(mask).__name__}.")
    if not isinstance(mask, torch.Tensor):
        raise Hint(f"{name} should return a torch tensor, got {type(mask).__name__}.")
    if mask.is_complex():
        raise Hint(f"{name} returned complex numbers: an additive mask holds 0 and -inf.")
    return mask


def _heads_hint(heads, batch, n):
    return (f"Your mask has a head axis of size {heads}: my_decoder_mask(ids, pad) is not told how many "
            f"heads the model has (the check's has {HEADS}, the paper's 8), and the mask is the same for "
            f"every head. Give the head axis size 1, (batch, 1, n, n) = {(batch, 1, n, n)}: it "
            "broadcasts over any number of heads.")


def _decoder_cells(got, ids, target):
    """The hidden cells of a learner's additive mask, (batch, HEADS, n, n), or raise Hint."""
    batch, _, n, _ = target
    try:
        fits = torch.broadcast_shapes(tuple(got.shape), target) == target
    except RuntimeError:
        fits = False
    if not fits:
        if tuple(got.shape) == (batch, n, n):
            raise Hint(f"Shape (batch, n, n) = {(batch, n, n)} does not broadcast to (batch, heads, n, n): "
                       f"the batch axis would meet the heads axis. Add a head axis of size 1: "
                       f"(batch, 1, n, n).")
        if got.dim() == 4 and tuple(got.shape[:1] + got.shape[2:]) == (batch, n, n):
            raise Hint(_heads_hint(got.shape[1], batch, n))
        raise Hint(f"The mask should broadcast to (batch, heads, n, n), e.g. shape (batch, 1, n, n) = "
                   f"{(batch, 1, n, n)}; got {tuple(got.shape)} for ids of shape {tuple(ids.shape)}.")
    if got.dim() == 4 and got.shape[1] != 1:
        raise Hint(_heads_hint(got.shape[1], batch, n))
    got = got.expand(target)
    if got.dtype == torch.bool:
        raise Hint("Booleans where an additive mask is asked: build it as floats, 0 where a query may "
                   "read a key and -inf where it may not (masked_fill(hidden, float('-inf')) on zeros).")
    if not got.is_floating_point():
        raise Hint(f"dtype {got.dtype}: an additive mask is a float tensor (0 and -inf); integers "
                   "cannot hold -inf.")
    if torch.isnan(got).any():
        raise Hint("The mask contains nan: 0 × -inf and -inf − (-inf) give nan. Place the -inf with "
                   "masked_fill or torch.where, and combine the two masks as booleans first.")
    if (got == float("inf")).any():
        raise Hint("The mask holds +inf: the mask is added to the scores, and e^(+inf) is infinite, so "
                   "softmax gives nan. Hidden cells get -inf.")
    hidden = got <= LARGE_NEGATIVE
    odd = (got != 0) & ~hidden
    if odd.any():
        value = got[odd].flatten()[0].item()
        if value > 0:
            raise Hint(f"The mask holds {value:g}: added to a score, a positive number gives that cell "
                       "more weight instead of hiding it. A hidden cell gets -inf (e^(-inf) = 0), a "
                       "visible one 0.")
        if value <= FLOAT32_ZERO:
            raise Hint(f"The mask holds {value:g}: e^{value:g} is 0 in float32, so it hides a cell only "
                       f"while that cell's own score is less than {-value + FLOAT32_ZERO:g} above the best "
                       "visible score of its row; -inf hides it whatever the scores (e^(-inf) = 0), and a "
                       "visible cell gets 0.")
        raise Hint(f"The mask holds {value:g}: added to a score, it only lowers that cell's weight "
                   f"(by a factor e^{value:g}), it does not hide it. A hidden cell gets -inf "
                   "(e^(-inf) = 0), a visible one 0.")
    finite = hidden & ~torch.isinf(got)
    return hidden, (float(got[finite].max()) if finite.any() else None)


@checker
@_one_thread
def check_decoder_mask(fn):
    """my_decoder_mask(ids, pad) against helpers.attention's additive_mask(causal_mask(n),
    padding_mask(ids, pad)) on four random padded batches: padded at the end, at the start, and
    with pad = 7."""
    name = "my_decoder_mask(ids, pad)"
    reference = [(helpers.attention, "additive_mask", "helpers.attention.additive_mask")]
    instead = ("combine the causal and the padding mask as booleans with |, then place -inf with "
               "masked_fill.")
    batches, got_cells, large_negative, dtypes = [], [], None, set()
    for seed, (batch, n, pad, side) in enumerate(DECODER_BATCHES):
        ids = padded_batch(seed, batch, n, pad, side)
        got = _as_tensor(call(fn, name, ids, pad, reference=reference, instead=instead), "my_decoder_mask")
        dtypes.add(got.dtype)
        cells, finite = _decoder_cells(got, ids, (batch, HEADS, n, n))
        batches.append((ids, pad, (batch, HEADS, n, n)))
        got_cells.append(cells)
        if finite is not None:
            large_negative = finite if large_negative is None else max(large_negative, finite)

    def matches(patterns):
        """True when the learner's cells are these patterns, one per batch."""
        return all(torch.equal(cells, pattern.expand(target)) for cells, pattern, (_, _, target)
                   in zip(got_cells, patterns, batches, strict=True))

    if matches([_right_decoder_cells(ids, pad) for ids, pad, _ in batches]):
        odd = sorted(str(t).replace("torch.", "") for t in dtypes - {torch.float32})
        if odd:
            return (f"The right cells, but your mask is {odd[0]}: build it in float32 (torch.float, the "
                    "dtype of the scores it is added to); added to float32 scores, a float64 mask makes "
                    "them float64, and a half-precision one rounds them.")
        if large_negative is not None:
            return Passed(_large_negative_works(large_negative))
        return Passed("Your mask equals additive_mask(causal_mask(n), padding_mask(ids, pad)) on four "
                      "padded batches, padded at the end and at the start; shape (batch, 1, n, n), it "
                      "broadcasts over the heads.")
    per_batch = [list(decoder_mask_mistakes(ids, pad)) for ids, pad, _ in batches]
    for k, (hint, _) in enumerate(per_batch[0]):
        if matches([mistakes[k][1] for mistakes in per_batch]):
            return hint
    return ("Not this mask yet: hide key j from query i when j > i (causal) or when key j is "
            "padding; -inf there, 0 elsewhere, shape (batch, 1, n, n).")


# --- Check your understanding --------------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_ORDER_QUESTION = (
    "a",
    "Each output depends only on the set of tokens a query reads: shuffling the tokens "
    "shuffles the outputs, Attention(X_ρ) = Attention(X)_ρ, and the mean does not see the order.",
    {"b": "Attention weights come from the query and key vectors, not from where a key stands: "
          "after the shuffle every token scores the same set of keys again (section 1: 'use' "
          "got the same output at position 6 and at position 2).",
     "c": "Training changes W_Q, W_K and W_V, but without positions no input carries the order, "
          "so no weight can learn it: section 5 zeroed the trained model's position table and "
          "the ticket and its shuffled words got the same scores."},
)


@checker
def check_order_question(answer_1):
    """Question 1: what attention without positions makes of the same words in another order."""
    return choice(answer_1, "answer_1", *_ORDER_QUESTION)


PADDING_SHAPE_HINTS = {
    (2, 120, 120): "(2, 120, 120) has one value per (query, key) pair: the key padding mask has one "
                   "value per token of each ticket, and the same row serves every query (section 6).",
    (120, 120): "(120, 120) is the causal mask's shape (attn_mask, one row per query, notebook 04): the "
                "padding mask has one row per ticket.",
    (2, 1, 1, 120): "(2, 1, 1, 120) is the additive form additive_mask builds to broadcast over heads "
                    "and queries; src_key_padding_mask itself is (batch, n) (section 6).",
    (120, 2): "(120, 2) is transposed: src_key_padding_mask is (batch, n), one row per ticket, even "
              "when the tokens themselves are passed sequence first (batch_first=False).",
}


# The shape of question 2's src_key_padding_mask: 2 tickets padded to 120 tokens, one value per token.
_PADDING_SHAPE = (2, 120)
_PADDING_WHY = ("Without the mask each real token gives some weight to the 102 padding keys, so its output "
                "and the scores can change; src_key_padding_mask holds one value per token of each ticket, "
                "(batch, n) = {}.")

_PADDING_QUESTION = (
    "a",
    "",
    {"b": "The mean leaves out the padding *rows*, but inside attention every real token has "
          "already read the padding *keys*, in both blocks: section 6 printed False for "
          "'padded without mask = alone'.",
     "c": "A padding key is not empty: it is the <pad> embedding plus a position vector, and it "
          "takes a share of every softmax row, since e^score > 0 for any finite score "
          "(section 6: 'padded without mask = alone' is False)."},
)


@checker
def check_padding_question(answer_2, shape_2):
    """Question 2: a short ticket padded without a mask, and the shape of src_key_padding_mask."""
    picked = choice(answer_2, "answer_2", *_PADDING_QUESTION)
    if not isinstance(picked, Passed):
        return picked
    got = shape(shape_2, "shape_2")
    if got == _PADDING_SHAPE:
        return Passed(_PADDING_WHY.format(_PADDING_SHAPE))
    if got in PADDING_SHAPE_HINTS:
        return PADDING_SHAPE_HINTS[got]
    return ("shape_2: a key padding mask holds one True/False per token of each ticket: "
            "(number of tickets, number of tokens).")


_ROUTER_QUESTION = (
    "a",
    "The router has the whole ticket at once, so every token may read every other (padding mask "
    "only); the writer predicts the next word, which does not exist yet, so it reads only the "
    "past (causal mask, plus padding in batches).",
    {"b": "Swapped: the writer predicts the next word, so each of its tokens may read only the "
          "past (the causal mask, section 8); the router has the whole ticket, and a 'not' near "
          "the end may change how earlier words are read (section 8).",
     "c": "An encoder lets every token read the tokens after it: trained like that, the writer "
          "would read the next word of the reply instead of predicting it, and fail when it has "
          "to write new text (section 8)."},
)


@checker
def check_router_question(answer_3):
    """Question 3: which masks the router and the writer need."""
    return choice(answer_3, "answer_3", *_ROUTER_QUESTION)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_decoder_mask, helpers.attention.additive_mask,
         lambda f: lambda ids, pad: f(causal_mask(ids.shape[1]), padding_mask(ids, pad)))
