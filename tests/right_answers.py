"""Two right answers, written differently, for every exercise of helpers.checks.EXERCISES: the
solution's (as the notebook's answer cell writes it) and another way a learner could write it.

Each answer is the text of a notebook cell that defines ``answer`` (or ``answers``, a tuple, for
an exercise with several functions), run after PRELUDE, the notebooks' imports, in a namespace of
its own (:func:`answers`). tests/test_routes.py checks that each passes, and that every exercise
has two.
"""

PRELUDE = """
import math, random
from collections import Counter
import torch
import torch.nn.functional as F
from torch import nn
from helpers.bleu import ngrams
from helpers.distributed import n_tokens, token_loss
from helpers.norms import layer_norm
from helpers.tasks.numbers import BOS, EOS, PAD
"""

ANSWERS = {
    "check_attention": ["""
def answer(Q, K, V):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return torch.softmax(scores, dim=-1) @ V
""", """
def answer(Q, K, V):
    weights = (torch.einsum("...qd,...kd->...qk", Q, K) * Q.shape[-1] ** -0.5).softmax(-1)
    return torch.einsum("...qk,...kv->...qv", weights, V)
"""],
    "check_sinusoidal_positions": ["""
def answer(n, d):
    pos = torch.arange(n, dtype=torch.float).unsqueeze(1)
    two_i = torch.arange(0, d, 2, dtype=torch.float)
    angle = pos / 10000 ** (two_i / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table
""", """
def answer(n, d):
    inverse = torch.exp(-math.log(10000) * torch.arange(0, d, 2).float() / d)
    angle = torch.outer(torch.arange(n).float(), inverse)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(n, d)
"""],
    "check_layer_norm": ["""
def answer(x, gamma, beta, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
""", """
def answer(x, gamma, beta, eps=1e-5):
    var, mu = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    return (x - mu) * torch.rsqrt(var + eps) * gamma + beta
"""],
    "check_rms_norm": ["""
def answer(x, gamma, eps=1e-5):
    mean_square = (x ** 2).mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt(mean_square + eps)
""", """
def answer(x, gamma, eps=1e-5):
    rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(x.shape[-1])
    return x * torch.rsqrt(rms ** 2 + eps) * gamma
"""],
    "check_split_merge": ["""
def split(t, h):
    b, n, d_model = t.shape
    return t.view(b, n, h, d_model // h).transpose(1, 2)

def merge(t):
    b, h, n, d_k = t.shape
    return t.transpose(1, 2).reshape(b, n, h * d_k)

answers = (split, merge)
""", """
answers = (lambda t, h: t.unflatten(-1, (h, -1)).permute(0, 2, 1, 3),
           lambda t: t.permute(0, 2, 1, 3).flatten(2))
"""],
    "check_self_attention": ["""
def answer(x, W_Q, W_K, W_V, W_O, h):
    b, n, d_model = x.shape
    d_k = d_model // h
    Q, K, V = ((x @ W).view(b, n, h, d_k).transpose(1, 2) for W in (W_Q, W_K, W_V))
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    return (weights @ V).transpose(1, 2).reshape(b, n, d_model) @ W_O
""", """
def answer(x, W_Q, W_K, W_V, W_O, h):
    Q, K, V = ((x @ W).unflatten(-1, (h, -1)).transpose(1, 2) for W in (W_Q, W_K, W_V))
    heads = F.scaled_dot_product_attention(Q, K, V)       # a building block the text leaves open
    return heads.transpose(1, 2).flatten(2) @ W_O
"""],
    "check_ffn": ["""
def answer(x, L):
    hidden = torch.relu(x @ L.linear1.weight.T + L.linear1.bias)
    return hidden @ L.linear2.weight.T + L.linear2.bias
""", """
def answer(x, L):
    hidden = torch.addmm(L.linear1.bias, x.flatten(0, 1), L.linear1.weight.T).clamp(min=0)
    return torch.addmm(L.linear2.bias, hidden, L.linear2.weight.T).view_as(x)
"""],
    "check_pre_norm": ["""
def answer(x, L):
    y = layer_norm(x, L.norm1.weight, L.norm1.bias, L.norm1.eps)
    x = x + L.self_attn(y, y, y, need_weights=False)[0]
    z = layer_norm(x, L.norm2.weight, L.norm2.bias, L.norm2.eps)
    return x + torch.relu(z @ L.linear1.weight.T + L.linear1.bias) @ L.linear2.weight.T + L.linear2.bias
""", """
def norm(t, m):
    mu = t.mean(-1, keepdim=True)
    return (t - mu) / torch.sqrt(((t - mu) ** 2).mean(-1, keepdim=True) + m.eps) * m.weight + m.bias

def answer(x, L):
    y = norm(x, L.norm1)
    x = x + L.self_attn(y, y, y)[0]
    hidden = (norm(x, L.norm2) @ L.linear1.weight.T + L.linear1.bias).clamp(min=0)
    return x + hidden @ L.linear2.weight.T + L.linear2.bias
"""],
    "check_decoder_layer": ["""
def mha_forward(q_in, kv_in, A, hidden=None):
    b, n_q, d = q_in.shape
    h = A.num_heads
    W, bias = A.in_proj_weight, A.in_proj_bias
    q = (q_in @ W[:d].T + bias[:d]).view(b, -1, h, d // h).transpose(1, 2)
    k = (kv_in @ W[d:2 * d].T + bias[d:2 * d]).view(b, -1, h, d // h).transpose(1, 2)
    v = (kv_in @ W[2 * d:].T + bias[2 * d:]).view(b, -1, h, d // h).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
    heads = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, n_q, d)
    return heads @ A.out_proj.weight.T + A.out_proj.bias

def answer(y, memory, src_pad, L):
    n_tgt = y.shape[1]
    causal = torch.ones(n_tgt, n_tgt, dtype=torch.bool).triu(1)
    y = L.norm1(y + mha_forward(y, y, L.self_attn, hidden=causal))
    y = L.norm2(y + mha_forward(y, memory, L.multihead_attn, hidden=src_pad[:, None, None, :]))
    return L.norm3(y + L.linear2(torch.relu(L.linear1(y))))
""", """
def attend(q_in, kv_in, A, mask):
    d, h = q_in.shape[-1], A.num_heads
    q, k, v = (F.linear(t, w, b).unflatten(-1, (h, -1)).transpose(1, 2) for t, w, b in
               zip((q_in, kv_in, kv_in), A.in_proj_weight.chunk(3), A.in_proj_bias.chunk(3)))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)   # True = may attend
    return F.linear(out.transpose(1, 2).flatten(2), A.out_proj.weight, A.out_proj.bias)

def answer(y, memory, src_pad, L):
    n = y.shape[1]
    y = L.norm1(y + attend(y, y, L.self_attn, torch.ones(n, n, dtype=torch.bool).tril()))
    y = L.norm2(y + attend(y, memory, L.multihead_attn, ~src_pad[:, None, None, :]))
    return L.norm3(y + F.linear(F.relu(F.linear(y, L.linear1.weight, L.linear1.bias)),
                                L.linear2.weight, L.linear2.bias))
"""],
    "check_smoothed_loss": ["""
def answer(logits, target, eps_ls, pad):
    n_vocab = logits.shape[-1]
    q = torch.full_like(logits, eps_ls / n_vocab)
    q[torch.arange(len(target)), target] += 1 - eps_ls
    per_row = -(q * F.log_softmax(logits, dim=-1)).sum(dim=-1)
    return per_row[target != pad].mean()
""", """
def answer(logits, target, eps_ls, pad):
    logp = logits.log_softmax(-1)
    nll = -logp.gather(1, target[:, None])[:, 0]
    uniform = -logp.mean(-1)
    loss = (1 - eps_ls) * nll + eps_ls * uniform
    real = target != pad
    return (loss * real).sum() / real.sum()
"""],
    "check_greedy_decode": ["""
def answer(model, src):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src)
        ys = torch.full((src.shape[0], 1), BOS)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(src.shape[1] + 50):
            nxt = model.decode(ys, memory, src)[:, -1].argmax(-1)
            nxt = nxt.masked_fill(done, PAD)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == EOS
            if done.all():
                break
    return ys
""", """
def answer(model, src):
    model.eval()
    rows = []
    with torch.no_grad():
        memory = model.encode(src)
        ys = torch.full((len(src), 1), BOS)
        while ys.shape[1] <= src.shape[1] + 50:
            nxt = model.decode(ys, memory, src)[:, -1].argmax(-1)
            finished = (ys == EOS).any(1)
            ys = torch.cat([ys, torch.where(finished, PAD, nxt)[:, None]], 1)
            if (ys == EOS).any(1).all():
                break
    return ys
"""],
    "check_modern_count": ["""
def answer(config):
    d, d_ff = config["hidden_size"], config["intermediate_size"]
    h, h_kv = config["num_attention_heads"], config["num_key_value_heads"]
    d_k = d // h
    attn_params = d * h * d_k + 2 * d * h_kv * d_k + h * d_k * d
    layer = attn_params + 3 * d * d_ff + 2 * d
    embedding = config["vocab_size"] * d
    output = 0 if config["tie_word_embeddings"] else embedding
    return config["num_hidden_layers"] * layer + d + embedding + output
""", """
def answer(config):
    d = config["hidden_size"]
    kv = d // config["num_attention_heads"] * config["num_key_value_heads"]
    per_layer = 2 * d * d + 2 * d * kv + 3 * d * config["intermediate_size"] + 2 * d
    tables = 1 if config["tie_word_embeddings"] else 2
    return per_layer * config["num_hidden_layers"] + d + tables * config["vocab_size"] * d
"""],
    "check_decoder_mask": ["""
def answer(ids, pad):
    n = ids.shape[1]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    hidden = future | (ids == pad)[:, None, None, :]
    return torch.zeros(hidden.shape).masked_fill(hidden, float("-inf"))
""", """
def answer(ids, pad):
    n = ids.shape[1]
    visible = torch.tril(torch.ones(n, n, dtype=torch.bool)) & (ids != pad)[:, None, None, :]
    return torch.where(visible, 0.0, float("-inf"))
"""],
    "check_prefix_lm_mask": ["""
def answer(src_lengths, n, padding=None):
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    after_prefix = j > src_lengths[:, None, None]
    hidden = (j > i) & after_prefix
    if padding is not None:
        hidden = hidden | padding[:, None, :]
    return hidden
""", """
def answer(src_lengths, n, padding=None):
    rows = []
    for b, m in enumerate(src_lengths.tolist()):
        hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        hidden[:, :m + 1] = False
        if padding is not None:
            hidden[:, padding[b]] = True
        rows.append(hidden)
    return torch.stack(rows)
"""],
    "check_beam_step": ["""
def answer(log_p, lengths, finished, next_log_probs, alpha):
    batch, n_beam, vocab = next_log_probs.shape
    total = log_p[..., None] + next_log_probs
    as_is = torch.full_like(total, -math.inf)
    as_is[..., PAD] = log_p
    total = torch.where(finished[..., None], as_is, total)
    length = torch.where(finished, lengths, lengths + 1)[..., None]
    score = total / ((5 + length) / 6) ** alpha
    best = score.reshape(batch, n_beam * vocab).topk(n_beam, dim=1).indices
    return best // vocab, best % vocab, total.reshape(batch, n_beam * vocab).gather(1, best)
""", """
def answer(log_p, lengths, finished, next_log_probs, alpha):
    batch, n_beam, vocab = next_log_probs.shape
    keep = torch.full((vocab,), -math.inf)
    keep[PAD] = 0.0
    step = torch.where(finished[..., None], keep, next_log_probs)
    total = (log_p[..., None] + step).flatten(1)
    length = (lengths + (~finished).long())[..., None].expand(-1, -1, vocab).flatten(1)
    _, best = (total / ((5 + length) / 6) ** alpha).sort(dim=1, descending=True)
    best = best[:, :n_beam]
    return torch.div(best, vocab, rounding_mode="floor"), best.remainder(vocab), total.gather(1, best)
"""],
    "check_cached_attention": ["""
def answer(q_new, k_new, v_new, k_cache, v_cache):
    k = torch.cat([k_cache, k_new], dim=2)
    v = torch.cat([v_cache, v_new], dim=2)
    scores = q_new @ k.transpose(-2, -1) / math.sqrt(q_new.shape[-1])
    return scores.softmax(dim=-1) @ v, k, v
""", """
def answer(q_new, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat((k_cache, k_new), 2), torch.cat((v_cache, v_new), 2)
    return F.scaled_dot_product_attention(q_new, k, v), k, v
"""],
    "check_learn_merges": ["""
def answer(texts, n_merges):
    counts = Counter(word for text in texts for word in text.split())
    vocab = {(*word[:-1], word[-1] + "</w>"): n for word, n in counts.items()}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for symbols, n in vocab.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        if pairs[best] < 2:
            break
        merges.append(best)
        new_vocab = {}
        for symbols, n in vocab.items():
            merged, i = [], 0
            while i < len(symbols):
                if symbols[i:i + 2] == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            new_vocab[tuple(merged)] = n
        vocab = new_vocab
    return merges
""", """
def answer(texts, n_merges):
    words = Counter(w for t in texts for w in t.split())
    vocab = [[list(w[:-1]) + [w[-1] + "</w>"], n] for w, n in words.items()]
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for symbols, n in vocab:
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += n
        if not pairs:
            break
        top = max(pairs.values())
        if top < 2:
            break
        best = sorted(p for p, c in pairs.items() if c == top)[-1]
        merges.append(best)
        for entry in vocab:
            symbols, out, i = entry[0], [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            entry[0] = out
    return merges
"""],
    "check_make_batch": ["""
def answer(pairs, vocab):
    sources = [vocab.encode(s) for s, _ in pairs]
    targets = [vocab.encode(t) for _, t in pairs]
    n_src = max(len(s) for s in sources)
    n_tgt = max(len(t) for t in targets) + 1
    src = [s + [PAD] * (n_src - len(s)) for s in sources]
    tgt_in = [[BOS] + t + [PAD] * (n_tgt - 1 - len(t)) for t in targets]
    tgt_out = [t + [EOS] + [PAD] * (n_tgt - 1 - len(t)) for t in targets]
    return torch.tensor(src), torch.tensor(tgt_in), torch.tensor(tgt_out)
""", """
def answer(pairs, vocab):
    pad = nn.utils.rnn.pad_sequence
    src = pad([torch.tensor(vocab.encode(s)) for s, _ in pairs], batch_first=True, padding_value=PAD)
    tgt = [torch.tensor(vocab.encode(t)) for _, t in pairs]
    tgt_in = pad([torch.cat([torch.tensor([BOS]), t]) for t in tgt], batch_first=True, padding_value=PAD)
    tgt_out = pad([torch.cat([t, torch.tensor([EOS])]) for t in tgt], batch_first=True, padding_value=PAD)
    return src, tgt_in, tgt_out
"""],
    "check_bleu": ["""
def answer(hypotheses, references):
    matches, totals = [0] * 4, [0] * 4
    l_hyp = l_ref = 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        l_hyp, l_ref = l_hyp + len(hyp), l_ref + len(ref)
        for n in range(1, 5):
            hyp_grams = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
            ref_grams = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
            matches[n - 1] += sum(min(k, ref_grams[g]) for g, k in hyp_grams.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(totals) == 0 or min(matches) == 0:
        return 0.0
    bp = 1.0 if l_hyp > l_ref else math.exp(1 - l_ref / l_hyp)
    return 100 * bp * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)
""", """
def answer(hypotheses, references):
    c = sum(map(len, hypotheses))
    r = sum(map(len, references))
    log_p = 0.0
    for n in range(1, 5):
        hit = sum((ngrams(h, n) & ngrams(g, n)).total() for h, g in zip(hypotheses, references))
        seen = sum(max(len(h) - n + 1, 0) for h in hypotheses)
        if hit == 0:
            return 0.0
        log_p += math.log(hit / seen) / 4
    return 100 * math.exp(min(0.0, 1 - r / c) + log_p)
"""],
    "check_accumulation": ["""
def answer(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(n_tokens(tgt_out) for _, _, tgt_out in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        loss = token_loss(model, src, tgt_in, tgt_out) * n_tokens(tgt_out) / total
        loss.backward()
        whole += loss.item()
    optimizer.step()
    return whole
""", """
def answer(model, optimizer, micro_batches):
    for p in model.parameters():
        p.grad = None
    weights = torch.tensor([float(n_tokens(b[2])) for b in micro_batches])
    weights = weights / weights.sum()
    losses = []
    for w, (src, tgt_in, tgt_out) in zip(weights, micro_batches):
        part = w * token_loss(model, src, tgt_in, tgt_out)
        part.backward()
        losses.append(part.detach())
    optimizer.step()
    return torch.stack(losses).sum().item()
"""],
    "check_split": ["""
def answer(pairs, n_test, seed):
    english = sorted({e for e, _ in pairs})
    chosen = set(random.Random(seed).sample(english, n_test))
    test = [p for p in pairs if p[0] in chosen]
    references = {f for _, f in test}
    train = [p for p in pairs if p[0] not in chosen and p[1] not in references]
    return train, test
""", """
def answer(pairs, n_test, seed):
    draw = random.Random(seed).sample(sorted(set(e for e, _ in pairs)), n_test)
    test, train, held = [], [], set()
    for e, f in pairs:
        if e in draw:
            test.append((e, f))
            held.add(f)
    train = [(e, f) for e, f in pairs if e not in draw and f not in held]
    return train, test
"""],
    "check_bleu_several": ["""
def answer(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hyp, refs in zip(hypotheses, references, strict=True):
        c += len(hyp)
        r += min((len(ref) for ref in refs), key=lambda length: (abs(length - len(hyp)), length))
        for n in range(1, 5):
            most = Counter()
            for ref in refs:
                most |= ngrams(ref, n)
            matches[n - 1] += sum(min(k, most[g]) for g, k in ngrams(hyp, n).items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return 100 * bp * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)
""", """
def answer(hypotheses, references):
    c = sum(len(h) for h in hypotheses)
    r = sum(sorted((abs(len(g) - len(h)), len(g)) for g in refs)[0][1]
            for h, refs in zip(hypotheses, references))
    total = 0.0
    for n in range(1, 5):
        hit = seen = 0
        for h, refs in zip(hypotheses, references):
            grams = ngrams(h, n)
            best = Counter()
            for g in refs:
                best = best | ngrams(g, n)
            hit += sum((grams & best).values())
            seen += sum(grams.values())
        if hit == 0:
            return 0.0
        total += math.log(hit / seen)
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(total / 4)
"""],
}


def answers(check_name):
    """The right answers of one exercise: each the function (or the tuple of functions) a notebook
    cell defines, in a namespace of its own whose __name__ is __main__, as in a notebook."""
    made = []
    for text in ANSWERS[check_name]:
        namespace = {"__name__": "__main__"}
        exec(PRELUDE + text, namespace)
        made.append(namespace["answers"] if "answers" in namespace else namespace["answer"])
    return made
