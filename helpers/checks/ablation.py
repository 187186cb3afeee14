"""Checks for the tiny model's Table 3 (notebook 05): where one head should lose its advantage."""

from helpers.checks import checker, choice

_ONE_SOURCE = "Like the reversal, each output position needs one source letter only: "
_LOOK_FOR = (" One head can make that single pattern sharp. Look for the task where one output needs "
             "two letters.")


# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_HEADS_TASK_QUESTION = (
    "later of two",
    "Each output position needs two source letters at once, the one at its own position and the "
    "one at its mirror position. One head has one softmax: it puts its weight on one of them, or "
    "splits it and hands on a blend of both letters' values; two heads can each read one letter "
    "sharply. That is the paper's case for several heads (§3.2.2): with one head, averaging "
    "inhibits attending to two places at once.",
    {
        "copy": _ONE_SOURCE + "the letter at its own position, a diagonal instead of the reversal's "
                              "antidiagonal." + _LOOK_FOR,
        "rotate": _ONE_SOURCE + "the letter one position further on (the last output reads the first "
                                "letter), a shifted diagonal." + _LOOK_FOR,
        "every other": _ONE_SOURCE + "output 1 reads letter 1, output 2 letter 3, and so on: a fixed "
                                     "order of the source positions, one per output." + _LOOK_FOR,
    },
)


@checker
def check_heads_task_question(answer_heads):
    """Which task section 10's reason predicts to need several heads (the reversal needed one)."""
    return choice(answer_heads, "answer_heads", *_HEADS_TASK_QUESTION)
