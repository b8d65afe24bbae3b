// The published package, as a user gets it: `npm pack` (prepack rebuilds the wasm), the
// tarball's file list, then an install into an empty folder and a run there with a PATH that
// holds only node and npm (no Emscripten), checked against a float64 JS reference
// (consumer/smoke.mjs); and the installed types, resolved from node_modules.
import assert from 'node:assert/strict';
import { cp, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  EXPECTED_FILES, ROOT, installedPackageJson, makeNodeOnlyBin, makeTempDir, npmInstall,
  packTarball, removeDir, runOk, tarballFiles,
} from './helpers.mjs';
import { AUTO_TILE_ROWS, RELAXED_SIMD_SUPPORTED } from '../node/helpers.mjs';

let work;
let tarball;
let files;
let consumer;
let nodeOnlyEnv;
let summary;

before(async () => {
  work = await makeTempDir('install');
  await mkdir(join(work, 'pack'));
  tarball = await packTarball(join(work, 'pack'));
  files = await tarballFiles(tarball);
}, { timeout: 320_000 });

after(async () => {
  await removeDir(work);
}, { timeout: 60_000 });

describe('npm pack', () => {
  test('the tarball holds exactly the published files', () => {
    const published = files.filter((file) => !/^LICEN[CS]E(\.md|\.txt)?$/i.test(file));
    assert.deepEqual(published, [...EXPECTED_FILES].sort());
  });

  // The API reference is (the README links it); nothing else of docs/, such as the screenshots.
  test('no sources, tests, build trees, scripts or other docs are published', () => {
    const leaked = files.filter((file) => /^(src|include|tests|bindings|scripts|build|cmake|docs|demo|node_modules|\.ci)\//.test(file)
      && file !== 'docs/api.md');
    assert.deepEqual(leaked, []);
  });

  test('every target of the exports map and the types field is in the tarball', async () => {
    const { stdout } = await runOk('tar', ['-xzOf', tarball, 'package/package.json']);
    const manifest = JSON.parse(stdout);
    assert.equal(manifest.name, 'favor-attention');
    assert.equal(manifest.type, 'module');
    const targets = [manifest.types];
    const collect = (value) => {
      if (typeof value === 'string') targets.push(value);
      else for (const inner of Object.values(value)) collect(inner);
    };
    collect(manifest.exports);
    for (const target of targets) {
      const path = target.replace(/^\.\//, '');
      if (path.includes('*')) {
        const pattern = new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace('\\*', '.+').replace('*', '.+')}$`);
        assert.ok(files.some((file) => pattern.test(file)), `exports pattern ${target} matches no file`);
      } else {
        assert.ok(files.includes(path), `exports/types target ${target} is not in the tarball`);
      }
    }
    const conditions = Object.keys(manifest.exports['.']);
    assert.equal(conditions[0], 'types', 'the types condition must come first');
    assert.equal(conditions.at(-1), 'default', 'default must come last');
  });
});

describe('installed from the tarball, without Emscripten', () => {
  before(async () => {
    consumer = join(work, 'consumer');
    await mkdir(consumer);
    const bin = await makeNodeOnlyBin(work);
    nodeOnlyEnv = {
      PATH: bin,
      HOME: process.env.HOME ?? work,
      CI: 'true',
      NO_COLOR: '1',
      npm_config_update_notifier: 'false',
      npm_config_loglevel: 'warn',
    };
    await npmInstall(consumer, [tarball], { env: nodeOnlyEnv, timeout: 120_000 });
    await cp(join(ROOT, 'tests', 'package', 'consumer', 'smoke.mjs'), join(consumer, 'smoke.mjs'));
    const { stdout } = await runOk('node', ['smoke.mjs'], { cwd: consumer, env: nodeOnlyEnv, timeout: 60_000 });
    summary = JSON.parse(stdout);
  }, { timeout: 240_000 });

  test('the tarball is what got installed', async () => {
    const installed = await installedPackageJson(consumer);
    const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
    assert.equal(installed.version, manifest.version);
    const consumerManifest = JSON.parse(await readFile(join(consumer, 'package.json'), 'utf8'));
    assert.match(consumerManifest.dependencies['favor-attention'], /^file:.*\.tgz$/);
  });

  test('loads in Node with the SIMD module by default (threaded on several cores) and the scalar one on request', () => {
    assert.equal(summary.version, '0.1.0');
    const threads = Math.min(summary.cores, 8);
    // The consumer runs in this Node: the relaxed-SIMD build where it validates relaxed SIMD (Node >= 22).
    assert.deepEqual(summary.info, { version: '0.1.0', simd: true, relaxedSimd: RELAXED_SIMD_SUPPORTED, threads, tileRows: AUTO_TILE_ROWS, ...(threads === 1 && { threadsReason: 'one CPU core' }) });
    assert.deepEqual(summary.scalarInfo, { version: '0.1.0', simd: false, relaxedSimd: false, threads: 1, tileRows: 4, threadsReason: 'the threaded build needs WebAssembly SIMD' });
  });

  const REFERENCE_CHECKS = [
    'exact cross', 'exact cross scalar', 'exact causal scale 0.7', 'exact batched [2,3,5,*]',
    'attention matrix rows sum to 1', 'favor+ explicit W', 'favor+ explicit W causal', 'favor+ simd vs scalar',
    'load with wasmUrl path', 'load with wasmUrl URL', 'load with locateFile', 'load with wasmBinary',
  ];
  for (const name of REFERENCE_CHECKS) {
    test(`matches the float64 JS reference: ${name}`, () => {
      const value = summary.checks[name];
      assert.equal(typeof value, 'number', `${name} threw:\n${value}`);
      assert.ok(value <= 1e-5, `${name}: max relative difference ${value} > 1e-5`);
    });
  }

  test('FAVOR+ with m = 2048 features is close to exact attention', () => {
    const value = summary.checks['favor+ m=2048 relative error'];
    assert.equal(typeof value, 'number', `threw:\n${value}`);
    assert.ok(value > 0 && value < 0.05, `output relative error ${value} (expected in (0, 0.05))`);
  });

  test('the exports map exports package.json and dist/*, not the internals', () => {
    assert.equal(summary.packageJsonExported, '0.1.0');
    assert.equal(summary.internalsExported, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  test('TypeScript finds the installed declarations through node_modules', { timeout: 60_000 }, async () => {
    // .mts: npm init -y makes a CommonJS package, and the API needs ESM (top-level await).
    await cp(join(ROOT, 'tests', 'types', 'usage.ts'), join(consumer, 'usage.mts'));
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const declarations = join(consumer, 'node_modules', 'favor-attention', 'web', 'index.d.ts');
    for (const resolution of [['--module', 'nodenext'], ['--module', 'esnext', '--moduleResolution', 'bundler']]) {
      const { stdout } = await runOk('node', [
        tsc, '--strict', '--noEmit', '--ignoreConfig', '--pretty', 'false', '--target', 'esnext', '--listFiles',
        ...resolution, 'usage.mts',
      ], { cwd: consumer, env: nodeOnlyEnv, timeout: 60_000 });
      assert.ok(stdout.split('\n').map((line) => line.trim()).includes(declarations),
        `${resolution.join(' ')}: 'favor-attention' did not resolve to ${declarations}:\n${stdout}`);
    }
  });
});
