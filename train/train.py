"""Trains and exports the project's character-level Moby-Dick models (train/README.md).

    python3 train/train.py train MODEL [--seed 1|2|3] [--steps N] [--threads T]
        MODEL: softmax | performer | finetune (context 256, learned positions)
               long-softmax | long-performer (context 1024, rotary positions; three seeds each)
    python3 train/train.py manifest      # train/models/manifest.json from the per-model records
    python3 train/train.py fixtures      # train/fixtures/: the FAVOR+ check and the parity logits
    python3 train/train.py reevaluate    # the held-out figures of the exported models, again

Every number recorded (held-out bits per character, fixtures) is computed with the weights as
stored: rounded to float16, back to float32.
"""
import argparse
import base64
import glob
import hashlib
import json
import math
import os
import platform
import time

# OpenBLAS's own threads (Debian's torch multiplies with it) would otherwise run beside torch's:
# one thread per model unless TRAIN_THREADS says otherwise (set before torch loads OpenBLAS).
os.environ.setdefault('OPENBLAS_NUM_THREADS', os.environ.get('TRAIN_THREADS', '1'))

import torch  # noqa: E402

import corpus  # noqa: E402
from model import CharGPT, favor_positive, orthogonal_projection

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, 'models')
FIXTURES = os.path.join(HERE, 'fixtures')
M, REDRAW = 64, 100
# Per model: attention in training, context, positions, batch, steps, the seed of seed index 1
# (index s uses seed + 100 (s - 1)), learning rate, and the model it starts from.
SPECS = {
    'softmax': dict(favor=False, context=256, positions='learned', batch=16, steps=4000, seed=1, lr=2e-3,
                    title='trained with softmax attention'),
    # one_shift: trained with favor_positive's one-shift form, which its committed weights come
    # from (harmless for this model: 2.1119 bits/char either way on 64 held-out windows)
    'performer': dict(favor=True, context=256, positions='learned', batch=16, steps=4000, seed=2, lr=2e-3,
                      one_shift=True, title='Performer: trained with causal FAVOR+'),
    'finetune': dict(favor=True, context=256, positions='learned', batch=16, steps=800, seed=3, lr=3e-4,
                     start='softmax', title='softmax model fine-tuned with FAVOR+'),
    'long-softmax': dict(favor=False, context=1024, positions='rotary', batch=4, steps=1500, seed=11, lr=2e-3,
                         title='long context: trained with softmax attention, rotary positions'),
    # short: the first steps at a shorter context (the same characters per step), where local
    # attention is learned from many short prefixes; at 1024 from the start the Performer stalls
    # near 3.3-3.5 bits/char for its first 850 steps (train/README.md)
    'long-performer': dict(favor=True, context=1024, positions='rotary', batch=4, steps=1500, seed=12, lr=2e-3,
                           short=dict(context=256, batch=16, steps=750),
                           title='long context: Performer trained with causal FAVOR+, rotary positions'),
}
MODELS_IN_ORDER = list(SPECS)
EVAL_SUBSET = 32  # windows the Node test recomputes
FIRST_CHARS = 2048  # held-out characters the Node test predicts with the whole prefix (long models)
CURVE_EVERY, CURVE_WINDOWS = 250, 8  # held-out curve: bits/char on 8 fixed windows every 250 steps


def file_name(name, seed_index):
    return name if seed_index == 1 else '%s-seed%d' % (name, seed_index)


def new_model(vocab, spec):
    return CharGPT(len(vocab), context=spec['context'], positions=spec['positions'])


def encode(text, vocab):
    index = {c: i for i, c in enumerate(vocab)}
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def draw_projections(model, generator):
    d = model.config['width'] // model.config['heads']
    return [orthogonal_projection(M, d, generator) for _ in model.blocks]


def windows(ids, context, count=None):
    """Non-overlapping windows of context + 1 ids (stride context) over a text, as a [n, context + 1] tensor."""
    n = (len(ids) - 1) // context
    if count is not None:
        n = min(n, count)
    return torch.stack([ids[i * context:i * context + context + 1] for i in range(n)])


def in_double(model):
    """A float64 copy for evaluation (FAVOR+ in its chunked form, exact to rounding at any scale)."""
    import copy
    m = copy.deepcopy(model).double()
    m.set_projections([b.projection.double() for b in model.blocks] if model.blocks[0].projection is not None else None)
    return m


@torch.no_grad()
def bits_per_char(model, ids, count=None, double=True):
    if double:
        model = in_double(model)
    w = windows(ids, model.config['context'], count)
    total, n = 0.0, 0
    for chunk in w.split(8):
        logits = model(chunk[:, :-1])
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1),
                                                   reduction='sum').item()
        n += chunk[:, 1:].numel()
    return total / n / math.log(2), len(w)


@torch.no_grad()
def prefix_bits_per_char(model, ids, count):
    """Bits per character of ids[1..count] each predicted from all of the ids before it (one sequence)."""
    model = in_double(model)
    logits = model(ids[:count].unsqueeze(0))[0]
    return torch.nn.functional.cross_entropy(logits, ids[1:count + 1], reduction='mean').item() / math.log(2)


def as_stored(model):
    """Rounds every weight to float16 in place (what the exported file holds)."""
    with torch.no_grad():
        for _, t in model.tensors():
            t.copy_(t.half().float())


def train(name, seed_index, steps, threads):
    spec = SPECS[name]
    seed = spec['seed'] + 100 * (seed_index - 1)
    context, batch = spec['context'], spec['batch']
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    train_text, held_text, vocab = corpus.splits()
    data, held = encode(train_text, vocab), encode(held_text, vocab)
    model = new_model(vocab, spec)
    if 'start' in spec:  # e.g. the softmax model, fine-tuned with FAVOR+
        load(model, spec['start'])
    w_gen = torch.Generator().manual_seed(1000 + seed)
    batch_gen = torch.Generator().manual_seed(seed)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    lr = spec['lr']
    opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.05}, {'params': no_decay, 'weight_decay': 0.0}],
                            lr=lr, betas=(0.9, 0.98))
    warmup = 100
    curve, recent = [], []
    start = time.time()
    log = open(os.path.join(HERE, '.%s.log' % file_name(name, seed_index)), 'w')
    for step in range(steps):
        if spec['favor'] and step % REDRAW == 0:  # features redrawn periodically, as the Performer paper does
            model.set_projections(draw_projections(model, w_gen), one_shift=spec.get('one_shift', False))
        f = min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for g in opt.param_groups:
            g['lr'] = lr * f
        short = spec.get('short')
        ctx, size = (short['context'], short['batch']) if short and step < short['steps'] else (context, batch)
        starts = torch.randint(0, len(data) - ctx - 1, (size,), generator=batch_gen)
        x = torch.stack([data[s:s + ctx + 1] for s in starts.tolist()])
        logits = model(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent.append(loss.item() / math.log(2))
        if (step + 1) % CURVE_EVERY == 0 or step == steps - 1:
            # the mean training loss since the last point, and held-out bits/char with the weights as
            # they are now (float32, the current W), on fixed windows
            held_bpc = bits_per_char(model, held, CURVE_WINDOWS, double=False)[0]
            curve.append({'step': step + 1, 'trainBpc': round(sum(recent) / len(recent), 4),
                          'heldOutBpc': round(held_bpc, 4)})
            recent = []
        if step % 50 == 0 or step == steps - 1:
            print('%s step %d loss %.4f bpc %.3f %.0f s' % (name, step, loss.item(), loss.item() / math.log(2),
                                                            time.time() - start), file=log, flush=True)
    seconds = time.time() - start
    projections = [b.projection for b in model.blocks] if spec['favor'] else None
    export(model, name, seed_index, seed, vocab, held, projections, steps, seconds, threads, curve)


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


def export(model, name, seed_index, seed, vocab, held, projections, steps, seconds, threads, curve):
    spec = SPECS[name]
    os.makedirs(MODELS, exist_ok=True)
    as_stored(model)
    model.set_projections(projections)
    tensors, blob = [], bytearray()
    for tname, t in model.tensors():
        tensors.append({'name': tname, 'dims': list(t.shape), 'offset': len(blob), 'dtype': 'float16'})
        blob += t.detach().half().numpy().tobytes()
    stem = file_name(name, seed_index)
    file = stem + '.bin'
    with open(os.path.join(MODELS, file), 'wb') as f:
        f.write(blob)
    record = {
        'name': stem,
        'title': spec['title'] + ('' if seed_index == 1 else ' (seed %d)' % seed_index),
        'attention': 'favor' if spec['favor'] else 'softmax',
        'file': file, 'bytes': len(blob), 'sha256': hashlib.sha256(blob).hexdigest(),
        'architecture': dict(model.config, headDim=model.config['width'] // model.config['heads'], norm='pre-LayerNorm',
                             layerNormEps=1e-5, gelu='tanh', head='untied Linear with bias',
                             qkv='one Linear(width, 3 width) with bias: q, k, v; head h = columns [32h, 32h + 32)',
                             scale=1 / math.sqrt(model.config['width'] // model.config['heads']),
                             **({'rotary': {'base': 10000.0, 'pairs': 'halves: (x[i], x[i + d/2]) at angle p * base^(-2i/d)',
                                            'appliedTo': 'q and k of every head, before attention'}}
                                if spec['positions'] == 'rotary' else {})),
        'vocab': vocab,
        'tensors': tensors,
        'training': {'steps': steps, 'batch': spec['batch'], 'context': spec['context'], 'seed': seed,
                     'seedIndex': seed_index, 'lr': spec['lr'], 'seconds': round(seconds),
                     'threads': threads, 'cpu': cpu_name(), 'torch': torch.__version__,
                     **({'startsFrom': spec['start']} if 'start' in spec else {}),
                     **({'shortContextFirst': spec['short']} if 'short' in spec else {}),
                     **({'features': M, 'kernel': 'positive', 'sampling': 'orthogonal', 'redrawEvery': REDRAW,
                         'form': 'one key shift per head over all positions (favor_positive)' if spec.get('one_shift') else
                         'prefix sums in chunks of 32 at running key shifts (favor_causal_chunked)'}
                        if projections is not None else {})},
    }
    if curve:
        record['curve'] = {'every': CURVE_EVERY, 'heldOutWindows': CURVE_WINDOWS, 'points': curve}
    record.update(evaluate(model, held))
    if projections is not None:
        # the draw in use at the last step: a sample, not a trained parameter
        record['projections'] = [{'layer': i, 'dims': list(w.shape), 'dtype': 'float32', 'data': w.flatten().tolist()}
                                 for i, w in enumerate(projections)]
    with open(os.path.join(MODELS, stem + '.json'), 'w') as f:
        json.dump(record, f)


def evaluate(model, held):
    """The held-out figures of a record (float64, the weights as stored)."""
    context = model.config['context']
    bpc, count = bits_per_char(model, held)
    out = {'heldOutBpc': round(bpc, 4), 'heldOutWindows': count,
           'evalSubset': {'windows': EVAL_SUBSET, 'window': context + 1, 'stride': context, 'start': 0},
           'evalSubsetBpc': round(bits_per_char(model, held, EVAL_SUBSET)[0], 4)}
    if model.config['positions'] == 'rotary':
        out['firstCharsBpc'] = {'chars': FIRST_CHARS, 'bpc': round(prefix_bits_per_char(model, held, FIRST_CHARS), 4)}
    return out


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
    for path in sorted(glob.glob(os.path.join(MODELS, '*.json'))):
        with open(path) as f:
            name = json.load(f).get('name')
        base = name and name.split('-seed')[0]
        if base not in SPECS:
            continue
        model = new_model(vocab, SPECS[base])
        record = load(model, name)
        record.update(evaluate(model, held))
        with open(path, 'w') as f:
            json.dump(record, f)


def manifest():
    """manifest.json: every model's record (seed index 1), and the names of the other seeds' records
    (their own JSON files beside it) under `replicas`."""
    records, replicas = [], {}
    for name in MODELS_IN_ORDER:
        path = os.path.join(MODELS, name + '.json')
        if os.path.exists(path):
            with open(path) as f:
                records.append(json.load(f))
        others = [file_name(name, i) for i in (2, 3) if os.path.exists(os.path.join(MODELS, file_name(name, i) + '.json'))]
        if others:
            replicas[name] = others
    out = {'corpus': corpus.describe(), 'models': records, 'replicas': replicas}
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
    for name in MODELS_IN_ORDER:
        if not os.path.exists(os.path.join(MODELS, name + '.json')):
            continue
        spec = SPECS[name]
        model = new_model(vocab, spec)
        record = load(model, name)
        text = held_text[:spec['context']]
        ids = encode(text, vocab).unsqueeze(0)
        with torch.no_grad():
            logits = in_double(model)(ids)[0]
            exact = None
            if record['attention'] == 'favor':  # the same weights with exact attention on their q and k
                softmax = in_double(model)
                softmax.set_projections(None)
                exact = softmax(ids)[0]
        # long contexts: every 4th row and the last (the rotations reach every position either way)
        rows = list(range(len(text))) if len(text) <= 256 else list(range(0, len(text), 4)) + [len(text) - 1]
        out = {'model': name, 'attention': record['attention'], 'text': text, 'dims': [len(rows), logits.shape[1]],
               'rows': rows, 'logits': b64(logits[rows])}
        if exact is not None:
            out['exactLogits'] = b64(exact[rows])
        with open(os.path.join(FIXTURES, 'parity-%s.json' % name), 'w') as f:
            json.dump(out, f)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('command', choices=['train', 'manifest', 'fixtures', 'reevaluate'])
    parser.add_argument('model', nargs='?', choices=list(SPECS))
    parser.add_argument('--seed', type=int, default=1, choices=[1, 2, 3])
    parser.add_argument('--steps', type=int)
    parser.add_argument('--threads', type=int, default=int(os.environ.get('TRAIN_THREADS', '1')))
    a = parser.parse_args()
    if a.command == 'train':
        train(a.model, a.seed, a.steps or SPECS[a.model]['steps'], a.threads)
    elif a.command == 'manifest':
        manifest()
    elif a.command == 'reevaluate':
        reevaluate()
    else:
        fixtures()
