"""Checks of train/model.py's attention forms against each other, in float64 and float32:

    /usr/bin/python3 train/check_attention.py

- favor_causal_chunked (prefix sums of earlier chunks at running key shifts, log space within a
  chunk) equals the log-space reference favor_positive_logspace to rounding, at every chunk
  size, on mild and on sharp heads, in float64 and float32, with the reference's gradients;
- on sharp heads the quadratic training form favor_positive (one key shift per head and a
  clamp) loses early rows that the chunked form keeps;
- rotary positions make rotated q_i . rotated k_j depend on i - j only.

Exits non-zero on the first failed check. Needs Debian's python3-torch (npm run train:models
installs it).
"""
import math
import sys

import torch

from model import favor_causal_chunked, favor_positive, favor_positive_logspace, orthogonal_projection, rotary


def check(what, ok, detail):
    print(('ok   ' if ok else 'FAIL ') + what + ': ' + detail)
    if not ok:
        sys.exit(1)


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def check_gradients(prefix, reference, q, k, v, w, scale):
    """favor_causal_chunked's gradients of sum(out^2) against the reference form's, float64."""
    grads = []
    for form in (lambda *a: favor_causal_chunked(*a, 16), reference):
        inputs = [t.clone().requires_grad_() for t in (q, k, v)]
        form(*inputs, w, scale).square().sum().backward()
        grads.append([t.grad for t in inputs])
    for label, a, b in zip('qkv', *grads):
        check('%sgradient with respect to %s' % (prefix, label), rel(a, b) < 1e-9, 'max rel. difference %.2e' % rel(a, b))


def main():
    g = torch.Generator().manual_seed(5)
    B, H, L, d, dv, m = 2, 3, 300, 32, 16, 64
    w = orthogonal_projection(m, d, g).double()
    scale = 1 / math.sqrt(d)
    v = torch.randn(B, H, L, dv, generator=g, dtype=torch.float64)
    # sharp: large keys (log-features around -100), and late in the sequence one key equal to a
    # feature's direction (its log-feature +|w|^2/2): a single shift per head, set by that key,
    # puts every earlier key's weight below float32's range.
    for name, size in [('mild', 0.5), ('sharp', 8.0)]:
        q = size * torch.randn(B, H, L, d, generator=g, dtype=torch.float64)
        k = size * torch.randn(B, H, L, d, generator=g, dtype=torch.float64)
        if name == 'sharp':
            k[..., L - 10, :] = w[0] / math.sqrt(scale)
        ref = favor_positive_logspace(q, k, v, w, scale)
        for chunk in (1, 7, 64, 512):
            got = favor_causal_chunked(q, k, v, w, scale, chunk)
            # float64 sums of positive terms with exact shifts: rounding only
            check('%s heads, chunk %d, float64' % (name, chunk), rel(got, ref) < 1e-10, 'max rel. error %.2e' % rel(got, ref))
        got32 = favor_causal_chunked(q.float(), k.float(), v.float(), w.float(), scale, 64).double()
        # float32 features: exponents of size ~10 carry ~1e-6 relative error each
        check('%s heads, chunk 64, float32' % name, rel(got32, ref) < 1e-4, 'max rel. error %.2e' % rel(got32, ref))
        old = favor_positive(q.float(), k.float(), v.float(), w.float(), scale).double()
        lost = ((old - ref).abs().amax(-1) > 1e-3 * ref.abs().amax()).sum().item()
        print('     %s heads: the one-shift quadratic form differs from the reference in %d of %d rows' % (name, lost, B * H * L))
        if name == 'mild':
            check('mild heads: the quadratic form agrees', lost == 0, '%d rows differ' % lost)
            # the same gradients where both forms are exact
            check_gradients('', favor_positive, q, k, v, w, scale)
        else:
            check('sharp heads: the quadratic form loses rows the chunked form keeps', lost > 0, '%d rows' % lost)
            # gradients equal the log-space reference's (float64), where the quadratic form's are wrong
            check_gradients('sharp heads: ', favor_positive_logspace, q, k, v, w, scale)
    # rotary: (R_i q) . (R_j k) depends on i - j only
    q = torch.randn(1, 40, d, generator=g, dtype=torch.float64)
    k = torch.randn(1, 40, d, generator=g, dtype=torch.float64)
    a = rotary(q) @ rotary(k).transpose(-1, -2)
    b = rotary(q, offset=1000) @ rotary(k, offset=1000).transpose(-1, -2)
    check('rotary: scores invariant to a common offset', rel(b, a) < 1e-9, 'max rel. difference %.2e' % rel(b, a))
    check('rotary: norms kept', rel(rotary(q).norm(dim=-1), q.norm(dim=-1)) < 1e-12, 'ok')


if __name__ == '__main__':
    main()
