// The bench scripts' shared report plumbing (bench/lib/sections.mjs): which report is the
// committed one, where a report's results file goes, and that writing one section of a report
// leaves every other section as it was.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { isCommittedReport, readSections, resultsFileFor, writeSection } from '../../bench/lib/sections.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const committed = join(repo, 'BENCHMARKS.md');

test('isCommittedReport: the repository\'s BENCHMARKS.md however it is spelled, and no other file of that name', () => {
  assert.equal(isCommittedReport(committed), true);
  assert.equal(isCommittedReport(relative(process.cwd(), committed)), true);
  assert.equal(isCommittedReport(join(repo, 'bench', '..', 'BENCHMARKS.md')), true);
  assert.equal(isCommittedReport(join(repo, 'build', 'bench-quick', 'BENCHMARKS.md')), false);
  assert.equal(isCommittedReport(join(tmpdir(), 'BENCHMARKS.md')), false);
  assert.equal(isCommittedReport(join(repo, 'README.md')), false);
});

test('resultsFileFor: bench/ for the committed report or no --out, the report\'s folder for any other', () => {
  const bench = join(repo, 'bench');
  assert.equal(resultsFileFor(undefined, 'threads-results.json'), join(bench, 'threads-results.json'));
  assert.equal(resultsFileFor(committed, 'decode-results.json'), join(bench, 'decode-results.json'));
  const elsewhere = join(tmpdir(), 'some-run', 'BENCHMARKS.md');
  assert.equal(resultsFileFor(elsewhere, 'decode-results.json'), join(tmpdir(), 'some-run', 'decode-results.json'));
  const quick = join(repo, 'build', 'bench-quick', 'BENCHMARKS.md');
  assert.equal(resultsFileFor(quick, 'packed-results.json'), join(repo, 'build', 'bench-quick', 'packed-results.json'));
});

test('writeSection replaces its own section in place, appends it where it is missing, and keeps the rest byte for byte', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'favor-sections-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'B.md');
  const decode = (body) => `<!-- decode -->\n## Decode\n${body}\n<!-- /decode -->`;
  const node = '<!-- node -->\n## Node\nkept\n<!-- /node -->';
  const before = `# Report\n\nintro\n\n${decode('old')}\n\nbetween\n\n${node}\n\ntail\n`;
  writeFileSync(file, before);

  writeSection(file, 'decode', decode('new $& and $1'));  // '$' patterns must be written as they are
  assert.equal(readFileSync(file, 'utf8'), before.replace(decode('old'), () => decode('new $& and $1')));

  writeSection(file, 'packed', '<!-- packed -->\nP\n<!-- /packed -->');
  const after = readFileSync(file, 'utf8');
  assert.ok(after.startsWith(before.replace(decode('old'), () => decode('new $& and $1')).trimEnd()));
  assert.ok(after.endsWith('\n\n<!-- packed -->\nP\n<!-- /packed -->\n'));

  const sections = Object.fromEntries(readSections(file));
  assert.deepEqual(Object.keys(sections), ['decode', 'node', 'packed']);  // in the file's order
  assert.equal(sections.node, node);
  assert.equal(sections.decode, decode('new $& and $1'));

  const fresh = join(dir, 'none.md');
  writeSection(fresh, 'node', node);
  assert.equal(readFileSync(fresh, 'utf8'), `${node}\n`);
});
