"""Trains and exports the project's character-level Moby-Dick models (train/README.md).

    python3 train/train.py train softmax|performer|finetune [--steps N] [--threads T]
    python3 train/train.py manifest      # train/models/manifest.json from the per-model records
    python3 train/train.py fixtures      # train/fixtures/: the FAVOR+ check and the parity logits
    python3 train/train.py reevaluate    # the held-out figures of the exported models, again

Every number recorded (held-out bits per character, fixtures) is computed with the weights as
stored: rounded to float16, back to float32.
"""
import argparse
import base64
import hashlib
import json
import math
import os
import platform
import time

import torch

import corpus
from model import CharGPT, favor_positive, orthogonal_projection

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, 'models')
FIXTURES = os.path.join(HERE, 'fixtures')
CONTEXT, BATCH, M, REDRAW = 256, 16, 64, 100
SEEDS = {'softmax': 1, 'performer': 2, 'finetune': 3}
DEFAULT_STEPS = {'softmax': 4000, 'performer': 4000, 'finetune': 800}
EVAL_SUBSET = 32  # windows the Node test recomputes


def encode(text, vocab):
    index = {c: i for i, c in enumerate(vocab)}
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def draw_projections(model, generator):
    d = model.config['width'] // model.config['heads']
    return [orthogonal_projection(M, d, generator) for _ in model.blocks]


def windows(ids, count=None):
    """Non-overlapping windows of CONTEXT + 1 ids (stride CONTEXT) over a text, as a [n, 257] tensor."""
    n = (len(ids) - 1) // CONTEXT
    if count is not None:
        n = min(n, count)
    return torch.stack([ids[i * CONTEXT:i * CONTEXT + CONTEXT + 1] for i in range(n)])


def in_double(model):
    """A float64 copy for evaluation whose FAVOR+ is the log-space form (model.favor_positive_logspace):
    exact at any scale, as favor-attention is, where the training form's single key shift per
    head loses the keys far below it."""
    import copy
    m = copy.deepcopy(model).double()
    m.set_projections([b.projection.double() for b in model.blocks] if model.blocks[0].projection is not None else None)
    for b in m.blocks:
        b.logspace = True
    return m


@torch.no_grad()
def bits_per_char(model, ids, count=None):
    model = in_double(model)
    w = windows(ids, count)
    total, n = 0.0, 0
    for chunk in w.split(2 if model.blocks[0].projection is not None else 32):
        logits = model(chunk[:, :-1])
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1),
                                                   reduction='sum').item()
        n += chunk[:, 1:].numel()
    return total / n / math.log(2), len(w)


def as_stored(model):
    """Rounds every weight to float16 in place (what the exported file holds)."""
    with torch.no_grad():
        for _, t in model.tensors():
            t.copy_(t.half().float())


def train(name, steps, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(SEEDS[name])
    train_text, held_text, vocab = corpus.splits()
    data, held = encode(train_text, vocab), encode(held_text, vocab)
    model = CharGPT(len(vocab))
    if name == 'finetune':  # the softmax model, fine-tuned with FAVOR+
        load(model, 'softmax')
    w_gen = torch.Generator().manual_seed(1000 + SEEDS[name])
    batch_gen = torch.Generator().manual_seed(SEEDS[name])
    favor = name != 'softmax'
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    lr = 3e-4 if name == 'finetune' else 2e-3
    opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.05}, {'params': no_decay, 'weight_decay': 0.0}],
                            lr=lr, betas=(0.9, 0.98))
    warmup = 100
    start = time.time()
    log = open(os.path.join(HERE, '.%s.log' % name), 'w')
    for step in range(steps):
        if favor and step % REDRAW == 0:  # features redrawn periodically, as the Performer paper does
            model.set_projections(draw_projections(model, w_gen))
        f = min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for g in opt.param_groups:
            g['lr'] = lr * f
        starts = torch.randint(0, len(data) - CONTEXT - 1, (BATCH,), generator=batch_gen)
        x = torch.stack([data[s:s + CONTEXT + 1] for s in starts.tolist()])
        logits = model(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            print('%s step %d loss %.4f bpc %.3f %.0f s' % (name, step, loss.item(), loss.item() / math.log(2),
                                                            time.time() - start), file=log, flush=True)
    seconds = time.time() - start
    projections = [b.projection for b in model.blocks] if favor else None
    export(model, name, vocab, held, projections, steps, seconds, threads)


def load(model, name):
    """Loads an exported model's weights (float16 -> float32) and returns its record."""
    with open(os.path.join(MODELS, name + '.json')) as f:
        record = json.load(f)
    with open(os.path.join(MODELS, record['file']), 'rb') as f:
        raw = f.read()
    with torch.no_grad():
        for (tname, t), spec in zip(model.tensors(), record['tensors']):
            assert tname == spec['name']
            n = t.numel()
            values = torch.frombuffer(bytearray(raw[spec['offset']:spec['offset'] + 2 * n]), dtype=torch.float16)
            t.copy_(values.float().view_as(t))
    if record.get('projections'):
        model.set_projections([torch.tensor(p['data'], dtype=torch.float32).view(*p['dims']) for p in record['projections']])
    return record


def export(model, name, vocab, held, projections, steps, seconds, threads):
    os.makedirs(MODELS, exist_ok=True)
    as_stored(model)
    model.set_projections(projections)
    tensors, blob = [], bytearray()
    for tname, t in model.tensors():
        tensors.append({'name': tname, 'dims': list(t.shape), 'offset': len(blob), 'dtype': 'float16'})
        blob += t.detach().half().numpy().tobytes()
    file = name + '.bin'
    with open(os.path.join(MODELS, file), 'wb') as f:
        f.write(blob)
    bpc, count = bits_per_char(model, held)
    subset, _ = bits_per_char(model, held, EVAL_SUBSET)
    record = {
        'name': name,
        'title': {'softmax': 'trained with softmax attention', 'performer': 'Performer: trained with causal FAVOR+',
                  'finetune': 'softmax model fine-tuned with FAVOR+'}[name],
        'attention': 'softmax' if projections is None else 'favor',
        'file': file, 'bytes': len(blob), 'sha256': hashlib.sha256(blob).hexdigest(),
        'architecture': dict(model.config, headDim=model.config['width'] // model.config['heads'], norm='pre-LayerNorm',
                             layerNormEps=1e-5, gelu='tanh', head='untied Linear with bias',
                             qkv='one Linear(width, 3 width) with bias: q, k, v; head h = columns [32h, 32h + 32)',
                             scale=1 / math.sqrt(model.config['width'] // model.config['heads'])),
        'vocab': vocab,
        'tensors': tensors,
        'training': {'steps': steps, 'batch': BATCH, 'context': CONTEXT, 'seed': SEEDS[name], 'seconds': round(seconds),
                     'threads': threads, 'cpu': cpu_name(), 'torch': torch.__version__,
                     **({'features': M, 'kernel': 'positive', 'sampling': 'orthogonal', 'redrawEvery': REDRAW}
                        if projections is not None else {})},
        'heldOutBpc': round(bpc, 4), 'heldOutWindows': count,
        'evalSubset': {'windows': EVAL_SUBSET, 'window': CONTEXT + 1, 'stride': CONTEXT, 'start': 0},
        'evalSubsetBpc': round(subset, 4),
    }
    if projections is not None:
        record['projections'] = [{'layer': i, 'dims': list(w.shape), 'dtype': 'float32', 'data': w.flatten().tolist()}
                                 for i, w in enumerate(projections)]
    with open(os.path.join(MODELS, name + '.json'), 'w') as f:
        json.dump(record, f)


def cpu_name():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


def reevaluate():
    """Recomputes the held-out figures of the exported models (float64) into their records."""
    _, held_text, vocab = corpus.splits()
    held = encode(held_text, vocab)
    for name in SEEDS:
        path = os.path.join(MODELS, name + '.json')
        if not os.path.exists(path):
            continue
        model = CharGPT(len(vocab))
        record = load(model, name)
        record['heldOutBpc'] = round(bits_per_char(model, held)[0], 4)
        record['evalSubsetBpc'] = round(bits_per_char(model, held, EVAL_SUBSET)[0], 4)
        with open(path, 'w') as f:
            json.dump(record, f)


def manifest():
    records = []
    for name in ['softmax', 'performer', 'finetune']:
        path = os.path.join(MODELS, name + '.json')
        if os.path.exists(path):
            with open(path) as f:
                records.append(json.load(f))
    out = {'corpus': corpus.describe(), 'models': records}
    with open(os.path.join(MODELS, 'manifest.json'), 'w') as f:
        json.dump(out, f, separators=(',', ':'))


def b64(t):
    return base64.b64encode(t.detach().float().contiguous().numpy().tobytes()).decode()


def fixtures():
    os.makedirs(FIXTURES, exist_ok=True)
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(4, 64, 32, generator=g) * 0.8 for _ in range(3))
    w = orthogonal_projection(64, 32, g)
    check = {'dims': [4, 64, 32], 'wDims': [64, 32], 'scale': 1 / math.sqrt(32), 'q': b64(q), 'k': b64(k), 'v': b64(v),
             'w': b64(w), 'causal': b64(favor_positive(q, k, v, w, 1 / math.sqrt(32), True)),
             'bidirectional': b64(favor_positive(q, k, v, w, 1 / math.sqrt(32), False))}
    with open(os.path.join(FIXTURES, 'favor-check.json'), 'w') as f:
        json.dump(check, f)
    _, held_text, vocab = corpus.splits()
    text = held_text[:CONTEXT]
    for name in ['softmax', 'performer', 'finetune']:
        if not os.path.exists(os.path.join(MODELS, name + '.json')):
            continue
        model = CharGPT(len(vocab))
        record = load(model, name)
        with torch.no_grad():
            logits = in_double(model)(encode(text, vocab).unsqueeze(0))[0]
        with open(os.path.join(FIXTURES, 'parity-%s.json' % name), 'w') as f:
            json.dump({'model': name, 'attention': record['attention'], 'text': text, 'dims': list(logits.shape),
                       'logits': b64(logits)}, f)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('command', choices=['train', 'manifest', 'fixtures', 'reevaluate'])
    parser.add_argument('model', nargs='?', choices=list(SEEDS))
    parser.add_argument('--steps', type=int)
    parser.add_argument('--threads', type=int, default=int(os.environ.get('TRAIN_THREADS', '1')))
    a = parser.parse_args()
    if a.command == 'train':
        train(a.model, a.steps or DEFAULT_STEPS[a.model], a.threads)
    elif a.command == 'manifest':
        manifest()
    elif a.command == 'reevaluate':
        reevaluate()
    else:
        fixtures()
