"""Checks for notebook 07, masks and the shuffle test."""

import torch

from helpers.checks import Hint, checker, number
from helpers.tickets import PAD


def hidden_count_hint(count, n):
    """None when count is n(n-1)/2, else a hint naming what was counted instead."""
    if count != int(count):
        return f"A number of cells is a whole number, got {count}."
    count = int(count)
    if count == n * (n - 1) // 2:
        return None
    if count == n * (n + 1) // 2:
        return (f"{count} counts the diagonal too: a token may read itself, so only the cells "
                f"strictly above the diagonal are hidden.")
    if count == n * n:
        return f"{count} is every cell of the {n} × {n} table: only the cells above the diagonal are hidden."
    if count == n * (n - 1):
        return (f"{count} = {n} × {n - 1} counts both triangles: the causal mask hides only the one "
                f"above the diagonal (the future), n(n − 1)/2 cells.")
    if count == n:
        return f"{count} is the number of tokens (or the diagonal): count the -inf cells above the diagonal."
    if count == (n - 1) * (n - 2) // 2:
        return f"Count the first row too: the first token hides all {n - 1} tokens after it."
    return (f"Not quite: count the -inf entries of the {n}-token causal mask, "
            "e.g. int(torch.isinf(causal).sum()).")


@checker
def check_hidden_cells(hidden_cells):
    """hidden_cells: how many cells the causal mask hides for 6 tokens (15)."""
    return hidden_count_hint(number(hidden_cells, "hidden_cells"), 6)


def hidden_cells_of(mask, name):
    """The boolean 'hidden' pattern of a boolean mask or of an additive (0 / -inf) float mask."""
    if mask is None or mask is Ellipsis:
        raise Hint(f"Not answered yet: {name} is still the placeholder.")
    if not isinstance(mask, torch.Tensor):
        raise Hint(f"{name} should be a torch tensor, got {type(mask).__name__}: "
                   "nn.Transformer.generate_square_subsequent_mask(4) makes one.")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex() or not mask.is_floating_point():
        raise Hint(f"{name} has dtype {mask.dtype}: a mask is boolean (True = hidden) or float "
                   "(0 = visible, -inf = hidden).")
    if torch.isnan(mask).any():
        raise Hint(f"{name} contains NaN: a float mask holds only 0 and -inf.")
    if ((mask != 0) & ~torch.isinf(mask)).any():
        raise Hint(f"{name} is added to the scores before softmax: use -inf (not 1 or another "
                   "number) for a hidden cell and 0 for a visible one.")
    return torch.isinf(mask)


@checker
def check_four_token_mask(four, hidden):
    """four: the causal mask for 4 tokens; hidden: how many cells it hides (6)."""
    cells = hidden_cells_of(four, "four")
    if tuple(cells.shape) != (4, 4):
        return (f"four should have shape (4, 4), one row per token that reads and one column per "
                f"token it reads; got {tuple(cells.shape)}.")
    future = torch.ones(4, 4, dtype=torch.bool).triu(1)
    if torch.equal(cells, future.T):
        return "Your mask hides the past (below the diagonal): the causal mask hides the future, above it."
    if torch.equal(cells, torch.ones(4, 4, dtype=torch.bool).triu(0)):
        return "Your mask also hides the diagonal: a token must be able to read itself."
    if torch.equal(cells, ~future):
        return "Your mask is inverted: it hides what a token may read and shows the future."
    if not torch.equal(cells, future):
        return "four should hide exactly the cells above the diagonal (token i reads tokens 0..i)."
    return hidden_count_hint(number(hidden, "hidden"), 4)


@checker
def check_padding_mask(mask, batch):
    """mask: the padding mask of batch, shape (batch, n), True where the token is PAD."""
    if mask is None or mask is Ellipsis:
        return "Not answered yet: mask is still the placeholder."
    if not isinstance(batch, torch.Tensor) or batch.dim() != 2 or batch.is_floating_point() \
            or batch.dtype == torch.bool:
        return "Give the batch of token ids too: check_padding_mask(mask, batch)."
    if not isinstance(mask, torch.Tensor):
        return f"mask should be a torch tensor, got {type(mask).__name__}: compare the batch with PAD."
    right = batch == PAD
    b, n = right.shape
    if tuple(mask.shape) != (b, n):
        if tuple(mask.shape) == (n, b):
            return f"mask is transposed: it needs one row per ticket, shape (batch, n) = {(b, n)}."
        if mask.numel() == b * n:
            return (f"mask should have shape (batch, n) = {(b, n)}, one value per token of each "
                    f"ticket, not {tuple(mask.shape)}.")
        return (f"A padding mask has one value per token of each ticket: shape (batch, n) = {(b, n)}, "
                f"got {tuple(mask.shape)}.")
    if mask.dtype != torch.bool:
        if mask.is_floating_point() and torch.equal(torch.isinf(mask) & (mask < 0), right) \
                and torch.equal(mask.isfinite(), ~right):
            return ("That is the additive form (0 / -inf) of the right mask; here build the boolean "
                    "one, True = hidden: batch == PAD.")
        if not mask.is_complex() and torch.equal(mask == 1, ~right) and torch.equal(mask == 0, right):
            return ("Inverted, and not boolean: 1 marks the tokens to keep (the Hugging Face "
                    "convention). In PyTorch True means hidden: batch == PAD.")
        return (f"mask has dtype {mask.dtype}: use a boolean mask (compare with ==). A float mask is "
                "added to the scores, so a 1 would hide nothing.")
    if torch.equal(mask, right):
        return None
    if torch.equal(mask, ~right):
        return ("Inverted mask: True means hidden, and you marked the real tokens (ids != PAD). "
                "Every token would read only padding, and a ticket without padding gets nan.")
    if not mask.any():
        return "Your mask hides nothing: True must mark the padding tokens (id PAD = 0)."
    return "Some cells are wrong: the mask is True exactly where the token id is PAD (0)."
