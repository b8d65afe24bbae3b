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
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, M, DV, CHUNK = 64, 256, 64, 128
OPSET = 11
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

    def save(self, path, name, inputs, output, out_shape):
        self.nodes[-1].output[0] = output  # rename the last node's output
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)],
            initializer=self.inits)
        model = helper.make_model(graph, producer_name='favor-attention bench/onnx/generate.py',
                                  opset_imports=[helper.make_opsetid('', OPSET)])
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


if __name__ == '__main__':
    exact(False)
    exact(True)
    favor_bidirectional()
    favor_causal()
