"""A character-level pre-LayerNorm GPT whose attention is exact softmax or causal FAVOR+.

The layout is what model/runner.js reads (train/models/manifest.json records it): token
embeddings plus learned position embeddings (positions end at the context) or none, with rotary
positions applied to each head's q and k instead (positions that do not end); per layer x += Attn(LN1 x), x += MLP(LN2 x) with one Linear(d, 3d) giving q, k, v
(heads of 32 consecutive columns), GELU (tanh approximation), then a final LN and an untied head.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def orthogonal_projection(m, d, generator):
    """W (m x d): stacked Haar-orthogonal d x d blocks (sign-corrected QR of Gaussian matrices),
    each row scaled to the norm of an independent Gaussian d-vector (docs/design.md §2)."""
    blocks = []
    for _ in range((m + d - 1) // d):
        g = torch.randn(d, d, generator=generator, dtype=torch.float64)
        q, r = torch.linalg.qr(g)
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # Haar: fix the signs of R's diagonal
        blocks.append(q.T)
    w = torch.cat(blocks, 0)[:m]
    norms = torch.randn(m, d, generator=generator, dtype=torch.float64).norm(dim=1, keepdim=True)
    return (w * norms).float()


def favor_positive(q, k, v, w, scale, causal=True):
    """Causal (or bidirectional) FAVOR+ with the positive kernel for projection W (m x d):
    phi(x~) = exp(W x~ - |x~|^2/2)/sqrt(m), x~ = x sqrt(scale), out_i = sum_j phi_i.phi_j v_j / sum_j phi_i.phi_j
    over j <= i. In its quadratic masked form (the same sums as the prefix-state form, cheaper at
    L = 256). Shifts: per query row its max over features, per head one max over all keys and
    features: both constants of a row's weights, they cancel (and carry no gradient). 1/sqrt(m)
    cancels too. No epsilon is added to the features."""
    root = math.sqrt(scale)
    qs, ks = q * root, k * root
    qlog = qs @ w.T - 0.5 * (qs * qs).sum(-1, keepdim=True)
    klog = ks @ w.T - 0.5 * (ks * ks).sum(-1, keepdim=True)
    qf = torch.exp(qlog - qlog.amax(-1, keepdim=True).detach())
    kf = torch.exp(klog - klog.amax(dim=(-2, -1), keepdim=True).detach())
    a = qf @ kf.transpose(-1, -2)
    if causal:
        L = a.shape[-1]
        a = a * torch.ones(L, L, dtype=torch.bool, device=a.device).tril()
    return (a @ v) / a.sum(-1, keepdim=True).clamp_min(1e-30)


def favor_positive_logspace(q, k, v, w, scale, causal=True):
    """The same estimator with every weight sum_r exp(q_r + k_r) taken as a log-sum-exp over the
    features (O(L^2 m) memory): exact to rounding at any input scale. The reference that fixtures
    and held-out figures use: the quadratic form above shifts all of a head's keys by one max, so
    keys far below it (e^-745 in double) vanish, as they do in a softmax-trained model's sharp
    heads; favor-attention keeps them with running per-feature shifts."""
    root = math.sqrt(scale)
    qs, ks = q * root, k * root
    qlog = qs @ w.T - 0.5 * (qs * qs).sum(-1, keepdim=True)
    klog = ks @ w.T - 0.5 * (ks * ks).sum(-1, keepdim=True)
    logits = torch.logsumexp(qlog.unsqueeze(-2) + klog.unsqueeze(-3), -1)
    if causal:
        L = logits.shape[-1]
        logits = logits.masked_fill(~torch.ones(L, L, dtype=torch.bool, device=q.device).tril(), float('-inf'))
    return torch.softmax(logits, -1) @ v


def favor_causal_chunked(q, k, v, w, scale, chunk=16):
    """Causal FAVOR+ (positive kernel, projection W m x d) in the prefix-sum form, chunk by chunk,
    with a stabilizer that never looks ahead: the carried sums of earlier chunks hold each
    feature's keys shifted by the maximum of that feature's key logs over those chunks (rescaled
    exactly when it grows), and within a chunk the weights of query i over keys j <= i are taken
    in log space (a log-sum-exp over the features). Each row's terms are then scaled by the largest
    of them, which is exactly 1: no row's weights can underflow to 0, and nothing a row computes
    depends on a later key, in float32 as in exact arithmetic. The shifts carry no gradient (they
    cancel). The output is favor_positive's and favor_positive_logspace's in exact arithmetic, in
    O(L m (d + dv + chunk)) rather than O(L^2 m). q, k: [..., L, d]; v: [..., L, dv]."""
    root = math.sqrt(scale)
    qs, ks = q * root, k * root
    qlog = qs @ w.T - 0.5 * (qs * qs).sum(-1, keepdim=True)
    klog = ks @ w.T - 0.5 * (ks * ks).sum(-1, keepdim=True)
    L, m, dv = q.shape[-2], w.shape[0], v.shape[-1]
    lead = q.shape[:-2]
    state = torch.zeros(*lead, m, dv, dtype=q.dtype, device=q.device)  # sum_j exp(klog_j - shift) v_j^T
    norm = torch.zeros(*lead, m, dtype=q.dtype, device=q.device)       # sum_j exp(klog_j - shift)
    shift = torch.full((*lead, m), float('-inf'), dtype=q.dtype, device=q.device)  # over earlier chunks
    outs = []
    for c0 in range(0, L, chunk):
        c1 = min(L, c0 + chunk)
        ql, kl = qlog[..., c0:c1, :], klog[..., c0:c1, :]
        # within the chunk: log w_ij = logsumexp_r(qlog_ir + klog_jr), j <= i
        inside = torch.logsumexp(ql.unsqueeze(-2) + kl.unsqueeze(-3), -1)
        inside = inside.masked_fill(~torch.ones(c1 - c0, c1 - c0, dtype=torch.bool, device=q.device).tril(), float('-inf'))
        # earlier chunks: the largest term of each row is max_r (qlog_ir + shift_r)
        past = ql + shift.unsqueeze(-2)
        top = torch.maximum(inside.amax(-1), past.amax(-1)).detach().unsqueeze(-1)
        qf = torch.exp(past - top)  # 0 where shift is -inf (no earlier key)
        inner = torch.exp(inside - top)
        num = qf @ state + inner @ v[..., c0:c1, :]
        den = qf @ norm.unsqueeze(-1) + inner.sum(-1, keepdim=True)
        outs.append(num / den)
        new_shift = torch.maximum(shift, kl.amax(-2)).detach()
        rescale = torch.exp(shift - new_shift)  # 0 before the first chunk (state and norm are 0 then)
        kf = torch.exp(kl - new_shift.unsqueeze(-2))
        state = state * rescale.unsqueeze(-1) + kf.transpose(-1, -2) @ v[..., c0:c1, :]
        norm = norm * rescale + kf.sum(-2)
        shift = new_shift
    return torch.cat(outs, -2)


def rotary(x, offset=0, base=10000.0):
    """Rotary position embedding of x [..., L, d] (d even) for positions offset, offset + 1, ...:
    the halves (x1, x2) become (x1 cos - x2 sin, x1 sin + x2 cos) at angles p * base^(-2i/d), so
    that rotated q_i . rotated k_j depends on i - j only (and exp of it, which FAVOR+ estimates on
    the rotated vectors, too)."""
    L, d = x.shape[-2], x.shape[-1]
    half = d // 2
    inv = base ** (-torch.arange(half, dtype=torch.float64) * 2.0 / d)
    angles = (torch.arange(offset, offset + L, dtype=torch.float64).unsqueeze(-1) * inv).to(x.dtype)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class Block(nn.Module):
    def __init__(self, width, heads, mlp, rotary):
        super().__init__()
        self.heads = heads
        self.rotary = rotary    # rotary positions on q and k, before attention
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, mlp)
        self.fc2 = nn.Linear(mlp, width)
        self.projection = None  # FAVOR+: W (m x head dim); None: softmax
        self.one_shift = False  # FAVOR+ in favor_positive's one-shift form (the 256-context Performer's training)

    def attention(self, x):
        B, L, C = x.shape
        hd = C // self.heads
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, L, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        if self.rotary:
            q, k = rotary(q), rotary(k)
        scale = 1.0 / math.sqrt(hd)
        if self.projection is None:
            y = softmax_causal(q, k, v, scale)
        else:
            form = favor_positive if self.one_shift else lambda *a: favor_causal_chunked(*a, 32)
            y = form(q, k, v, self.projection, scale)
        return self.proj(y.transpose(1, 2).reshape(B, L, C))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate='tanh'))


def softmax_causal(q, k, v, scale, rows=256):
    """Exact causal softmax attention, a block of query rows at a time: each block scores only the
    keys up to its last row (about 5/8 of the masked square at L = 1024), in memory O(rows L)."""
    L = q.shape[-2]
    outs = []
    for r0 in range(0, L, rows):
        r1 = min(L, r0 + rows)
        s = (q[..., r0:r1, :] @ k[..., :r1, :].transpose(-1, -2)) * scale
        future = torch.arange(r1, device=q.device).unsqueeze(0) > torch.arange(r0, r1, device=q.device).unsqueeze(1)
        outs.append(torch.softmax(s.masked_fill(future, float('-inf')), -1) @ v[..., :r1, :])
    return torch.cat(outs, -2)


class CharGPT(nn.Module):
    def __init__(self, vocab, width=128, layers=4, heads=4, context=256, mlp=512, positions='learned'):
        super().__init__()
        self.config = dict(vocab=vocab, width=width, layers=layers, heads=heads, context=context, mlp=mlp,
                           positions=positions)
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width) if positions == 'learned' else None
        self.blocks = nn.ModuleList(Block(width, heads, mlp, positions == 'rotary') for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)
        for p in self.parameters():
            nn.init.normal_(p, std=0.02) if p.dim() == 2 else nn.init.zeros_(p)
        for b in self.blocks:
            nn.init.ones_(b.ln1.weight), nn.init.ones_(b.ln2.weight)
        nn.init.ones_(self.ln_f.weight)

    def set_projections(self, projections, one_shift=False):
        """FAVOR+ in every layer with these W (one per layer), or softmax with None. one_shift: the
        quadratic one-shift form (favor_positive) instead of the chunked one."""
        for b, w in zip(self.blocks, projections or [None] * len(self.blocks)):
            b.projection = w
            b.one_shift = one_shift

    def forward(self, ids):
        x = self.tok(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))

    def tensors(self):
        """(name, tensor) in the order of the exported file."""
        out = [('tok', self.tok.weight)] + ([('pos', self.pos.weight)] if self.pos is not None else [])
        for i, b in enumerate(self.blocks):
            for name, t in [('ln1.weight', b.ln1.weight), ('ln1.bias', b.ln1.bias), ('qkv.weight', b.qkv.weight),
                            ('qkv.bias', b.qkv.bias), ('proj.weight', b.proj.weight), ('proj.bias', b.proj.bias),
                            ('ln2.weight', b.ln2.weight), ('ln2.bias', b.ln2.bias), ('fc1.weight', b.fc1.weight),
                            ('fc1.bias', b.fc1.bias), ('fc2.weight', b.fc2.weight), ('fc2.bias', b.fc2.bias)]:
                out.append(('blocks.%d.%s' % (i, name), t))
        out += [('ln_f.weight', self.ln_f.weight), ('ln_f.bias', self.ln_f.bias),
                ('head.weight', self.head.weight), ('head.bias', self.head.bias)]
        return out
