"""Tokens and ids: the special tokens every task of the course shares, and a shared vocabulary.

- ``PAD, BOS, EOS``: the ids of ``<pad>``, ``<s>`` and ``</s>`` (0, 1, 2) in every task.
- ``Vocabulary``: one token list for both languages (the paper shares one between source and
  target, §3.4): the special tokens first, then every other token, sorted.
"""

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ["<pad>", "<s>", "</s>"]


class Vocabulary:
    """One token list for source and target: itos[id] -> token, stoi[token] -> id."""

    def __init__(self, tokens):
        words = sorted(set(tokens) - set(SPECIALS))
        self.itos = [*SPECIALS, *words]
        self.stoi = {token: i for i, token in enumerate(self.itos)}
        assert (self.stoi["<pad>"], self.stoi["<s>"], self.stoi["</s>"]) == (PAD, BOS, EOS)

    def __len__(self):
        return len(self.itos)

    def encode(self, tokens):
        """A list of tokens -> a list of ids."""
        return [self.stoi[t] for t in tokens]

    def decode(self, ids):
        """ids (a list or 1-d tensor, maybe starting with <s>) -> the tokens before </s>, without
        <s> and <pad>."""
        tokens = []
        for i in (int(i) for i in ids):
            if i == EOS:
                break
            if i not in (PAD, BOS):
                tokens.append(self.itos[i])
        return tokens
