"""Checks for the tiny model's Table 3 (notebook 05): why one head beats four on the reversal."""

from helpers.checks import checker, choice


@checker
def check_heads_question(answer_4):
    """Why one head of d_k = 64 did better than four heads of d_k = 16 on the reversal task."""
    return choice(
        answer_4, "answer_4", "one pattern",
        "Reversing needs one relation only: each position reads its mirror position. One head of "
        "d_k = 64 can make that single pattern sharp; translation needs several relations at once "
        "(which word agrees with which, which source word is being translated), and one head must "
        "average them.",
        {
            "more parameters": "Count them: the table prints 234,304 for both rows. W_Q, W_K and W_V "
                               "stack h · d_k = 64 rows whatever h is, so the heads share the same "
                               "weights differently, not more of them.",
            "less computation": "The matrix products are the same size: h · d_k = 64 columns in both; "
                                "the paper chose h and d_k so that \"the total computational cost is "
                                "similar to that of single-head attention\" (§3.2.2).",
            "luck": "Each of the 5 seeds of one head wrote at least 98.4 % right, above the best of the "
                    "5 base runs (95.6 %): the two ranges do not overlap.",
        })
