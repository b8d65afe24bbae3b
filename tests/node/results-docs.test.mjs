// The figures the docs quote are the files they come from: docs/models.md's tables are the ones
// `npm run eval:models` and `npm run eval:heads` wrote into model/results.md and
// model/heads-results.md, line for line, and train/README.md's
// held-out bits per character are the manifest's (to the three decimals shown), each model named
// as the page's menu names it; the generation
// rates the page computes from model/long-results.json are the ones long-results.md shows.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { modelLabel } from '../../model/model-label.js';

const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const manifest = JSON.parse(read('train/models/manifest.json'));

// Runs of consecutive table lines ("| ... |") of a markdown text.
function tables(markdown) {
  const out = [];
  let run = [];
  for (const line of markdown.split('\n')) {
    if (line.startsWith('|')) run.push(line);
    else if (run.length) out.push(run.join('\n')), (run = []);
  }
  if (run.length) out.push(run.join('\n'));
  return out;
}

test("docs/models.md quotes model/results.md's tables and held-out line as written", () => {
  const docs = read('docs/models.md'), results = read('model/results.md');
  const resultTables = tables(results);
  assert.equal(resultTables.length, 1, 'model/results.md has its table (the heads: heads-results.md)');
  const columns = resultTables[0].split('\n')[0].split('|').slice(2, -1).map((cell) => cell.trim());
  assert.deepEqual(columns, manifest.models.filter((m) => columns.some((c) => c.startsWith(`${m.name}:`))).map(modelLabel),
    'its columns name each model once (model-label.js), as eval.mjs writes them');
  for (const table of resultTables) assert.ok(docs.includes(table), `docs/models.md lacks the table starting ${table.split('\n')[0]}`);
  const fullSet = results.split('\n').find((line) => line.startsWith('Full held-out set'));
  assert.ok(fullSet && docs.includes(fullSet), "docs/models.md quotes results.md's full held-out line");
});

test("docs/models.md quotes model/heads-results.md (npm run eval:heads) as written, every model's heads", () => {
  const docs = read('docs/models.md'), results = read('model/heads-results.md');
  const resultTables = tables(results);
  // One table of heads per model, the per-layer table, the models' summary and the rotary models' bands.
  assert.equal(resultTables.length, manifest.models.length + 3, 'model/heads-results.md has its tables');
  for (const table of resultTables) assert.ok(docs.includes(table), `docs/models.md lacks the table starting ${table.split('\n')[0]}`);
  for (const model of manifest.models) assert.ok(results.includes(`| ${model.name} | head 0 |`), `heads-results.md has ${model.name}'s heads`);
});

test("train/README.md's held-out bits per character are the manifest's", () => {
  const readme = read('train/README.md');
  for (const model of manifest.models) {
    const row = readme.split('\n').find((line) => line.startsWith(`| ${model.name}:`));
    assert.ok(row, `train/README.md has a row for ${model.name}`);
    assert.ok(row.startsWith(`| ${modelLabel(model)} |`), `${model.name}: ${row} names it as the page and the tables do`);
    const cells = row.split('|').map((cell) => cell.trim());
    assert.ok(cells.includes(model.heldOutBpc.toFixed(3)), `${model.name}: ${row} quotes ${model.heldOutBpc.toFixed(3)}`);
  }
});

test('docs/training-curves.svg is drawn from the curves the model records hold (node train/curves.mjs)', async () => {
  const { records, svg } = await import('../../train/curves.mjs');
  const list = records();
  assert.ok(list.some((r) => r.name === 'long-performer') && list.some((r) => r.name === 'long-softmax'), 'the long-context models record curves');
  assert.equal(read('docs/training-curves.svg'), svg(list), 'regenerate with: node train/curves.mjs');
});

test("docs/models.md and README.md quote model/long-results.md (npm run eval:long) as written", () => {
  const docs = read('docs/models.md'), results = read('model/long-results.md');
  const resultTables = tables(results);
  assert.equal(resultTables.length, 2, 'model/long-results.md has its two tables');
  for (const table of resultTables) assert.ok(docs.includes(table), `docs/models.md lacks the table starting ${table.split('\n')[0]}`);
  const closing = results.trim().split('\n').at(-1);
  assert.ok(docs.includes(closing), "docs/models.md quotes long-results.md's closing sentence");
  assert.ok(read('README.md').includes(closing), "README.md quotes long-results.md's closing sentence");
  const json = JSON.parse(read('model/long-results.json'));
  assert.equal(json.curves.length, 5);
  for (const c of json.curves) assert.ok(results.includes(`| ${c.label} |`), `long-results.md has the row ${c.label}`);
});

test('the generation rates the page quotes (model/generation-rates.js over long-results.json) are long-results.md\'s', async () => {
  const { generationSummary } = await import('../../model/generation-rates.js');
  const results = read('model/long-results.md'), { generation } = JSON.parse(read('model/long-results.json'));
  const { span, first, last, crossing } = generationSummary(generation);
  const row = (name, r) => `| characters/s, ${name} | ${r.favor.toFixed(0)} | ${r.favorWindow.toFixed(0)} | ${r.exact.toFixed(0)} |`;
  const n = (x) => x.toLocaleString('en-US');
  assert.ok(results.includes(row(`characters ${n(span)}–${n(2 * span)}`, first)), row(`characters ${n(span)}–${n(2 * span)}`, first));
  assert.ok(results.includes(row(`last ${n(span)}`, last)), row(`last ${n(span)}`, last));
  assert.ok(results.includes(`${generation.order})`), 'long-results.md says in which order the runs went');
  assert.ok(crossing !== null && results.includes(`from the one ending at position ${n(crossing)}`), `the crossing at ${crossing}`);
  // every run has a block per 256 characters, at the same positions
  const positions = (blocks) => blocks.map((b) => b.position).join();
  assert.equal(generation.favor.length, generation.characters / generation.block);
  assert.equal(positions(generation.favorWindow), positions(generation.favor));
  assert.equal(positions(generation.exact), positions(generation.favor));
});
