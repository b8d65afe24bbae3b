// The type declarations, as a TypeScript consumer sees them: tests/types/usage.ts imports
// 'favor-attention' (a package self-reference, so it resolves through the exports map's
// `types` condition to web/index.d.ts) and must type-check under --strict with TypeScript's
// default lib, for both Node (module nodenext) and bundler resolution. Every
// `// @ts-expect-error` in it must be a real error, and a wrong file must fail.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, removeDir, run } from './helpers.mjs';

const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');
const USAGE = join(ROOT, 'tests', 'types', 'usage.ts');
const DECLARATIONS = join(ROOT, 'web', 'index.d.ts');
const NODENEXT = ['--module', 'nodenext', '--moduleResolution', 'nodenext'];
const BUNDLER = ['--module', 'esnext', '--moduleResolution', 'bundler'];

let scratch;  // inside the package, so that 'favor-attention' self-resolves from its files

before(async () => {
  assert.ok(existsSync(TSC), `${TSC} is missing: run npm install (typescript is a devDependency)`);
  scratch = await mkdtemp(join(ROOT, 'tests', 'types', '.tmp-'));
});

after(async () => {
  await removeDir(scratch);
});

/** Runs tsc --strict --noEmit on files; returns { code, diagnostics: [{ file, line, code, text }], output }. */
async function tsc(files, flags = []) {
  const args = ['--strict', '--noEmit', '--ignoreConfig', '--pretty', 'false', ...flags, ...files];
  const { code, stdout, stderr } = await run(TSC, args, { cwd: ROOT, timeout: 60_000 });
  const output = `${stdout}${stderr}`;
  const diagnostics = [];
  for (const line of output.split('\n')) {
    const match = /^(.*?)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line) ?? /^()()error (TS\d+): (.*)$/.exec(line);
    if (match) diagnostics.push({ file: match[1], line: Number(match[2]) || 0, code: match[3], text: match[4] });
  }
  return { code, diagnostics, output };
}

describe('type declarations', () => {
  test('usage.ts type-checks with --strict and TypeScript\'s default lib (module nodenext)', async () => {
    const { code, output } = await tsc([USAGE], NODENEXT);
    assert.equal(code, 0, `tsc failed:\n${output}`);
  });

  test('usage.ts type-checks with --strict and TypeScript\'s default lib (moduleResolution bundler)', async () => {
    const { code, output } = await tsc([USAGE], BUNDLER);
    assert.equal(code, 0, `tsc failed:\n${output}`);
  });

  test('usage.ts type-checks with --target esnext, and the types come from web/index.d.ts', async () => {
    const { code, output } = await tsc([USAGE], [...NODENEXT, '--target', 'esnext', '--listFiles']);
    assert.equal(code, 0, `tsc failed:\n${output}`);
    const listed = output.split('\n').map((line) => line.trim());
    assert.ok(listed.includes(DECLARATIONS), `'favor-attention' did not resolve to ${DECLARATIONS}:\n${output}`);
  });

  test('each @ts-expect-error line in usage.ts is an error without its directive', async () => {
    const source = await readFile(USAGE, 'utf8');
    const lines = source.split('\n');
    const expected = [];
    const stripped = lines.map((line, i) => {
      if (!/^\s*\/\/ @ts-expect-error/.test(line)) return line;
      expected.push(i + 2);  // 1-based number of the line after the directive
      return '';  // keep line numbers
    });
    assert.ok(expected.length >= 10, `usage.ts has only ${expected.length} @ts-expect-error lines`);
    const file = join(scratch, 'usage-without-directives.ts');
    await writeFile(file, stripped.join('\n'));
    const { code, diagnostics, output } = await tsc([file], [...NODENEXT, '--target', 'esnext']);
    assert.notEqual(code, 0, 'tsc accepted the misuse');
    const name = relative(ROOT, file);
    const errorLines = new Set(diagnostics.filter((d) => d.file === name).map((d) => d.line));
    const missing = expected.filter((line) => !errorLines.has(line));
    assert.deepEqual(missing, [], `no error on these lines (of ${name}), the declarations accept the misuse:\n${output}`);
    const unexpected = diagnostics.filter((d) => d.file !== name || !expected.includes(d.line));
    assert.deepEqual(unexpected, [], 'errors on other lines than the misuse');
  });

  test('a wrong file fails: the check can fail and the import is typed, not any', async () => {
    const file = join(scratch, 'wrong.ts');
    await writeFile(file, [
      "import { loadFavor, notExported } from 'favor-attention';",
      'const favor = await loadFavor();',
      'const n: number = favor.info.version;',
      "favor.exactAttention({ data: [1, 2], dims: [1, 2] }, { data: [1, 2], dims: [1, 2] }, { data: [1, 2], dims: [1, 2] });",
      'export { n, notExported };',
      '',
    ].join('\n'));
    const { code, diagnostics, output } = await tsc([file], [...NODENEXT, '--target', 'esnext']);
    assert.notEqual(code, 0, `tsc accepted a wrong file:\n${output}`);
    const codes = diagnostics.map((d) => `${d.line}:${d.code}`);
    assert.ok(!codes.some((c) => c.endsWith('TS2307')), `'favor-attention' did not resolve:\n${output}`);
    assert.ok(codes.includes('1:TS2305'), `expected "has no exported member 'notExported'":\n${output}`);
    assert.ok(codes.includes('3:TS2322'), `expected string not assignable to number:\n${output}`);
    assert.ok(diagnostics.some((d) => d.line === 4 && /number\[\]/.test(d.text) && /Float32Array/.test(d.text)),
      `expected number[] not assignable to Float32Array:\n${output}`);
  });
});
