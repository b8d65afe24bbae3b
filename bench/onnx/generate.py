#!/usr/bin/python3
"""Writes the ONNX graphs the benchmark runs in onnxruntime-web (bench/onnx/*.onnx).

Needs Debian's python3-onnx (apt-get install -y python3-onnx); the generated files are
committed, so `npm run bench` itself needs no Python. Rerun after changing this file:

    /usr/bin/python3 bench/onnx/generate.py

Opset 11 (ReduceSum/ReduceMax axes are attributes; CumSum, Range exist). Every graph takes
float32 row-major inputs with dynamic sequence lengths and d = 64, m = 256, dv = 64 fixed.

exact-bidirectional.onnx  out = Softmax((q * scale) k^T) v
exact-causal.onnx         the same with -inf above the diagonal; the mask is built inside the
                          graph (Range, Greater, Where) so no L x L input is copied per call
favor-bidirectional.onnx  FAVOR+ (positive features) with an explicit projection input w [m, d],
                          the same formulas and stabilization as favor-attention's core:
                            x~ = x d^-1/4
                            K' = exp(w.k~ - |k~|^2/2 - c)   c = per-feature max over all keys
                            Q' = exp(w.q~ + c - rowmax(w.q~ + c))
                            out = (Q' (K'^T v)) / (Q' (K'^T 1))
                          (the 1/sqrt(m) factors and the query's -|q~|^2/2 cancel in the ratio)
favor-causal.onnx         causal FAVOR+ as a chunked prefix sum (chunk C = 128 rows, L a multiple
                          of C): inside a chunk a masked Q'K'^T (N x C x C), across chunks the
                          per-chunk states K'^T v (N x m x dv) and K'^T 1 summed by an exclusive
                          CumSum over the chunk axis; memory O(L/C * m * dv), linear in L.
mha-bidirectional.onnx    onnxruntime's fused com.microsoft.MultiHeadAttention (contrib op, CPU
mha-causal.onnx           kernel contrib_ops/cpu/bert), one head: inputs (B, L, N*H) = (1, L, 64);
                          causal = its attribute unidirectional = 1
decode-exact.onnx         one decode step of exact attention with a key/value cache: q, k, v
                          [1, H, 1, d], past_k, past_v [1, H, T, d] -> out [1, H, 1, dv] and
                          present_k, present_v [1, H, T + 1, d] (Concat on the sequence axis)
decode-mha.onnx           the same step with the fused MultiHeadAttention and its past_key /
                          past_value inputs (q, k, v as (1, 1, H*d), past as [1, H, T, d])
decode-favor.onnx         one append to a FAVOR+ prefix state, per head: k, v [H, n, d] appended to
                          the state s [H, m, dv], z [H, m, 1] and its per-feature key shift c
                          [H, 1, m] (the running max of the key exponents; -inf when empty), then
                          the newest query q [H, 1, d] read against it:
                            c' = max(c, max_n klog)   s' = s exp(c - c')^T + exp(klog - c')^T v
                            out = Q' s' / Q' z'       Q' = exp(w.q~ + c' - rowmax)
                          (the state convention of favor-attention's createCausalState); n = 1 is
                          a decode step, larger n a prefill
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, M, DV, CHUNK = 64, 256, 64, 128
OPSET = 11
H = 8  # heads of the decode graphs (bench/decode.mjs)
HERE = os.path.dirname(os.path.abspath(__file__))


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = f'{op_type.lower()}_{self.count}'
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def save(self, path, name, inputs, output, out_shape, outputs=(), microsoft=False):
        """outputs: further (name, shape) graph outputs, already produced by some node."""
        self.nodes[-1].output[0] = output  # rename the last node's output
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in [(output, out_shape), *outputs]],
            initializer=self.inits)
        opsets = [helper.make_opsetid('', OPSET)]
        if microsoft:
            opsets.append(helper.make_opsetid('com.microsoft', 1))
        model = helper.make_model(graph, producer_name='favor-attention bench/onnx/generate.py',
                                  opset_imports=opsets)
        model.ir_version = 7
        onnx.checker.check_model(model)
        onnx.save(model, path)
        print(f'wrote {os.path.relpath(path)} ({os.path.getsize(path)} bytes)')


def exact(causal):
    g = Graph()
    scale = g.const('scale', np.float32(1.0 / np.sqrt(D)))
    qs = g.op('Mul', ['q', scale])
    kt = g.op('Transpose', ['k'], perm=[1, 0])
    scores = g.op('MatMul', [qs, kt])  # [L, S]
    if causal:
        shape = g.op('Shape', ['q'])
        length = g.op('Gather', [shape, g.const('zero', np.int64(0))], axis=0)
        idx = g.op('Range', [g.const('start', np.int64(0)), length, g.const('step', np.int64(1))])
        rows = g.op('Unsqueeze', [idx], axes=[1])  # [L, 1]
        cols = g.op('Unsqueeze', [idx], axes=[0])  # [1, L]
        above = g.op('Greater', [cols, rows])  # key j > query i
        scores = g.op('Where', [above, g.const('neg_inf', np.float32(-np.inf)), scores])
    probs = g.op('Softmax', [scores], axis=1)
    g.op('MatMul', [probs, 'v'])
    g.save(os.path.join(HERE, f'exact-{"causal" if causal else "bidirectional"}.onnx'),
           'exact_attention', [('q', ['L', D]), ('k', ['S', D]), ('v', ['S', DV])], 'out', ['L', DV])


def favor_features(g):
    """Stabilized positive features: returns (Q' [L, m], K' [S, m])."""
    root = g.const('root_scale', np.float32(D ** -0.25))
    half = g.const('half', np.float32(0.5))
    qs = g.op('Mul', ['q', root])
    ks = g.op('Mul', ['k', root])
    kw = g.op('Gemm', [ks, 'w'], transB=1)  # [S, m]
    knorm = g.op('Mul', [g.op('ReduceSum', [g.op('Mul', [ks, ks])], axes=[1], keepdims=1), half])
    klog = g.op('Sub', [kw, knorm])
    shift = g.op('ReduceMax', [klog], axes=[0], keepdims=1)  # [1, m] per-feature key max
    kf = g.op('Exp', [g.op('Sub', [klog, shift])])
    qw = g.op('Add', [g.op('Gemm', [qs, 'w'], transB=1), shift])  # [L, m]
    qf = g.op('Exp', [g.op('Sub', [qw, g.op('ReduceMax', [qw], axes=[1], keepdims=1)])])
    return qf, kf


def favor_bidirectional():
    g = Graph()
    qf, kf = favor_features(g)
    kv = g.op('Gemm', [kf, 'v'], transA=1)  # [m, dv]
    ksum = g.op('ReduceSum', [kf], axes=[0], keepdims=1)  # [1, m]
    num = g.op('MatMul', [qf, kv])  # [L, dv]
    den = g.op('Gemm', [qf, ksum], transB=1)  # [L, 1]
    g.op('Div', [num, den])
    g.save(os.path.join(HERE, 'favor-bidirectional.onnx'), 'favor_attention',
           [('q', ['L', D]), ('k', ['S', D]), ('v', ['S', DV]), ('w', [M, D])], 'out', ['L', DV])


def favor_causal():
    g = Graph()
    qf, kf = favor_features(g)
    tril = g.const('tril', np.tril(np.ones((CHUNK, CHUNK), np.float32)))
    qc = g.op('Reshape', [qf, g.const('shape_qk', np.array([-1, CHUNK, M], np.int64))])
    kc = g.op('Reshape', [kf, 'shape_qk'])
    vc = g.op('Reshape', ['v', g.const('shape_v', np.array([-1, CHUNK, DV], np.int64))])
    kct = g.op('Transpose', [kc], perm=[0, 2, 1])  # [N, m, C]
    # Inside each chunk: masked Q'K'^T.
    block = g.op('Mul', [g.op('MatMul', [qc, kct]), tril])  # [N, C, C]
    intra_num = g.op('MatMul', [block, vc])  # [N, C, dv]
    intra_den = g.op('ReduceSum', [block], axes=[2], keepdims=1)  # [N, C, 1]
    # Across chunks: exclusive prefix sums of the per-chunk states.
    axis = g.const('axis0', np.int64(0))
    state = g.op('CumSum', [g.op('MatMul', [kct, vc]), axis], exclusive=1)  # [N, m, dv]
    zsum = g.op('CumSum', [g.op('ReduceSum', [kct], axes=[2], keepdims=1), axis], exclusive=1)  # [N, m, 1]
    num = g.op('Add', [intra_num, g.op('MatMul', [qc, state])])
    den = g.op('Add', [intra_den, g.op('MatMul', [qc, zsum])])
    g.op('Reshape', [g.op('Div', [num, den]), g.const('shape_out', np.array([-1, DV], np.int64))])
    g.save(os.path.join(HERE, 'favor-causal.onnx'), 'favor_attention_causal',
           [('q', ['L', D]), ('k', ['L', D]), ('v', ['L', DV]), ('w', [M, D])], 'out', ['L', DV])


def mha(causal):
    """onnxruntime's fused attention op, one head; q, k, v fed as (1, L, d)."""
    g = Graph()
    g.nodes.append(helper.make_node('MultiHeadAttention', ['q', 'k', 'v'], ['out'], domain='com.microsoft',
                                    num_heads=1, unidirectional=1 if causal else 0))
    g.save(os.path.join(HERE, f'mha-{"causal" if causal else "bidirectional"}.onnx'), 'mha_attention',
           [('q', [1, 'L', D]), ('k', [1, 'S', D]), ('v', [1, 'S', DV])], 'out', [1, 'L', DV], microsoft=True)


def decode_exact():
    g = Graph()
    g.nodes.append(helper.make_node('Concat', ['past_k', 'k'], ['present_k'], axis=2))
    g.nodes.append(helper.make_node('Concat', ['past_v', 'v'], ['present_v'], axis=2))
    qs = g.op('Mul', ['q', g.const('scale', np.float32(1.0 / np.sqrt(D)))])
    scores = g.op('MatMul', [qs, g.op('Transpose', ['present_k'], perm=[0, 1, 3, 2])])  # [1, H, 1, T+1]
    probs = g.op('Softmax', [scores], axis=3)
    g.op('MatMul', [probs, 'present_v'])
    g.save(os.path.join(HERE, 'decode-exact.onnx'), 'exact_decode_step',
           [('q', [1, H, 1, D]), ('k', [1, H, 1, D]), ('v', [1, H, 1, DV]),
            ('past_k', [1, H, 'T', D]), ('past_v', [1, H, 'T', DV])], 'out', [1, H, 1, DV],
           outputs=[('present_k', [1, H, 'T1', D]), ('present_v', [1, H, 'T1', DV])])


def decode_mha():
    g = Graph()
    g.nodes.append(helper.make_node('MultiHeadAttention', ['q', 'k', 'v', '', '', '', 'past_k', 'past_v'],
                                    ['out', 'present_k', 'present_v'], domain='com.microsoft', num_heads=H))
    g.save(os.path.join(HERE, 'decode-mha.onnx'), 'mha_decode_step',
           [('q', [1, 1, H * D]), ('k', [1, 1, H * D]), ('v', [1, 1, H * DV]),
            ('past_k', [1, H, 'T', D]), ('past_v', [1, H, 'T', DV])], 'out', [1, 1, H * DV],
           outputs=[('present_k', [1, H, 'T1', D]), ('present_v', [1, H, 'T1', DV])], microsoft=True)


def decode_favor():
    g = Graph()
    root = g.const('root_scale', np.float32(D ** -0.25))
    half = g.const('half', np.float32(0.5))
    wt = g.op('Transpose', ['w'], perm=[1, 0])  # [d, m]
    ks = g.op('Mul', ['k', root])
    knorm = g.op('Mul', [g.op('ReduceSum', [g.op('Mul', [ks, ks])], axes=[2], keepdims=1), half])
    klog = g.op('Sub', [g.op('MatMul', [ks, wt]), knorm])  # [H, n, m]
    g.nodes.append(helper.make_node('Max', ['c', g.op('ReduceMax', [klog], axes=[1], keepdims=1)], ['c_out']))
    rescale = g.op('Exp', [g.op('Sub', ['c', 'c_out'])])  # [H, 1, m]; 0 where c was -inf
    kf = g.op('Exp', [g.op('Sub', [klog, 'c_out'])])  # [H, n, m]
    kft = g.op('Transpose', [kf], perm=[0, 2, 1])  # [H, m, n]
    rescale_t = g.op('Transpose', [rescale], perm=[0, 2, 1])  # [H, m, 1]
    g.nodes.append(helper.make_node('Add', [g.op('Mul', ['s', rescale_t]), g.op('MatMul', [kft, 'v'])], ['s_out']))
    g.nodes.append(helper.make_node('Add', [g.op('Mul', ['z', rescale_t]),
                                            g.op('ReduceSum', [kft], axes=[2], keepdims=1)], ['z_out']))
    qw = g.op('Add', [g.op('MatMul', [g.op('Mul', ['q', root]), wt]), 'c_out'])  # [H, 1, m]
    qf = g.op('Exp', [g.op('Sub', [qw, g.op('ReduceMax', [qw], axes=[2], keepdims=1)])])
    g.op('Div', [g.op('MatMul', [qf, 's_out']), g.op('MatMul', [qf, 'z_out'])])  # [H, 1, dv]
    g.save(os.path.join(HERE, 'decode-favor.onnx'), 'favor_decode_step',
           [('q', [H, 1, D]), ('k', [H, 'n', D]), ('v', [H, 'n', DV]), ('w', [M, D]),
            ('s', [H, M, DV]), ('z', [H, M, 1]), ('c', [H, 1, M])], 'out', [H, 1, DV],
           outputs=[('s_out', [H, M, DV]), ('z_out', [H, M, 1]), ('c_out', [H, 1, M])])


if __name__ == '__main__':
    exact(False)
    exact(True)
    favor_bidirectional()
    favor_causal()
    mha(False)
    mha(True)
    decode_exact()
    decode_mha()
    decode_favor()
