// Model files are checked against train/models/manifest.json (bytes, sha256) when they load, in
// Node (model/node.js) and on the page (demo/src/model-view.js, here with a stubbed fetch): a
// damaged, cut or padded file is an error naming the file and what does not match, never a
// model that computes wrong logits.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { loadFavor } from 'favor-attention';

import { loadModel, MODELS_DIR, readManifest } from '../../model/node.js';
import { CharModel, verifyModelFile } from '../../model/runner.js';

let favor, record, good, dir;
before(async () => {
  favor = await loadFavor({ threads: 1 });
  record = (await readManifest()).models.find((m) => m.name === 'softmax');
  good = new Uint8Array(await readFile(new URL(record.file, MODELS_DIR)));
  dir = await mkdtemp(join(tmpdir(), 'favor-models-'));
  await copyFile(new URL('manifest.json', MODELS_DIR), join(dir, 'manifest.json'));
});
after(() => rm(dir, { recursive: true, force: true }));

// The damage the checks are for: 64 bytes flipped in the weights; a download cut at 60% and
// zero-padded to full size (what a loader that preallocates the manifest's size builds); the
// same cut left short; one byte too many.
function damaged() {
  const flipped = good.slice();
  for (let i = 0; i < 64; i++) flipped[1000 + i * 997] ^= 0xff;
  const cut = Math.floor(good.length * 0.6);
  const padded = new Uint8Array(good.length);
  padded.set(good.subarray(0, cut));
  const longer = new Uint8Array(good.length + 1);
  longer.set(good);
  return {
    flipped: [flipped, /SHA-256 [0-9a-f]{64}, but the manifest's record 'softmax' says 2be87a54/],
    'cut and zero-padded': [padded, /SHA-256 [0-9a-f]{64}, but the manifest's record 'softmax' says/],
    cut: [good.slice(0, cut), new RegExp(`${cut} bytes, but the manifest's record 'softmax' says ${record.bytes} \\(cut short`)],
    longer: [longer, new RegExp(`${good.length + 1} bytes, but the manifest's record 'softmax' says ${record.bytes}`)],
  };
}

const nodeSha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

test('verifyModelFile accepts the manifest\'s file (SubtleCrypto and node:crypto agree) and rejects every damaged one, naming it', async () => {
  assert.equal(await verifyModelFile(record, good), good);
  assert.equal(await verifyModelFile(record, good, { sha256: nodeSha256 }), good);
  for (const [name, [bytes, pattern]] of Object.entries(damaged())) {
    for (const sha256 of [undefined, nodeSha256]) {
      await assert.rejects(verifyModelFile(record, bytes, { sha256 }), (e) => e instanceof RangeError
        && e.message.startsWith('model file softmax.bin: ') && pattern.test(e.message), name);
    }
  }
  await assert.rejects(verifyModelFile(record, good, { sha256: () => { throw new Error('no digest here'); } }),
    /^Error: model file softmax.bin: its SHA-256 could not be computed to check it: no digest here$/);
});

test('loadModel (Node) rejects a damaged file with its path and loads a good one', async () => {
  const path = join(dir, record.file);
  const dirUrl = pathToFileURL(`${dir}/`);
  for (const [name, [bytes, pattern]] of Object.entries(damaged())) {
    await writeFile(path, bytes);
    await assert.rejects(loadModel(favor, 'softmax', { dir: dirUrl }),
      (e) => e instanceof RangeError && e.message.startsWith(`model file ${path}: `) && pattern.test(e.message), name);
  }
  await writeFile(path, good);
  const model = await loadModel(favor, 'softmax', { dir: dirUrl });
  assert.equal(model.forward(model.encode('Call me Ishmael.')).logits.dims[0], 16);
  model.dispose();
});

test('a CharModel built from too few bytes fails at once, naming the file, not in forward()', () => {
  assert.throws(() => new CharModel(favor, record, good.subarray(0, 1000)),
    (e) => e instanceof RangeError && /^model file softmax\.bin: 1000 bytes, but the manifest's record 'softmax' says 1697970/.test(e.message));
});

test('the page\'s loader (demo/src/model-view.js) rejects a cut, damaged or longer download with the file\'s URL', async () => {
  const { loadModel: pageLoad } = await import('../../demo/src/model-view.js');
  const manifest = JSON.parse(await readFile(new URL('manifest.json', MODELS_DIR), 'utf8'));
  let body = good;
  const realFetch = globalThis.fetch;
  // The manifest, then the weights as two chunks (a stream that ends early when the body is short).
  globalThis.fetch = async (url) => {
    if (String(url).endsWith('manifest.json')) return new Response(JSON.stringify(manifest));
    const half = body.length >> 1;
    return new Response(new ReadableStream({ start(c) { c.enqueue(body.slice(0, half)); c.enqueue(body.slice(half)); c.close(); } }));
  };
  try {
    const cases = damaged();
    for (const name of ['flipped', 'cut', 'longer']) {
      body = cases[name][0];
      await assert.rejects(pageLoad(favor, 'softmax'), (e) => e instanceof RangeError && /^model file file:\/\/.*softmax\.bin: /.test(e.message)
        && cases[name][1].test(e.message), name);
    }
    body = good;
    const model = await pageLoad(favor, 'softmax');
    assert.equal(model.record.name, 'softmax');
  } finally {
    globalThis.fetch = realFetch;
  }
});
