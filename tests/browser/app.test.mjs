// The packed package in headless Chromium, four ways a web app takes it: a Vite production
// build, the Vite dev server (with optimizeDeps.exclude, as docs/api.md says), a webpack 5
// production build, and no bundler at all (an import map to node_modules/favor-attention/web/browser.js). Each page computes
// exact attention and FAVOR+ (positive, m = 256, seed 1) on fixed inputs, synchronously and
// through loadFavor({ worker: true }); the results must be what Node computes with the same
// tarball (the worker's: the page's own bits), with no console error, the .wasm served as
// application/wasm and the worker script emitted or served. The no-bundler page, the loader's
// options and the worker's smooth animation also run in headless Firefox (Debian's firefox-esr,
// driven over WebDriver BiDi by scripts/firefox.mjs).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  ROOT, installedPackageJson, killGroup, launchChromium, makeTempDir, npmEnv,
  openResultPage, packTarball, removeDir, runOk, serveStatic, tail,
} from '../package/helpers.mjs';
import { launchFirefox } from '../../scripts/firefox.mjs';

const APP_SOURCE = join(ROOT, 'tests', 'browser', 'app');
const TOLERANCE = 1e-5;

let work;
let app;
let browser;
let nodeResult;

before(async () => {
  browser = await launchChromium();  // first: a missing Chromium fails fast with its message
  work = await makeTempDir('browser');
  await mkdir(join(work, 'pack'));
  const tarball = await packTarball(join(work, 'pack'));
  app = join(work, 'app');
  await cp(APP_SOURCE, app, { recursive: true });
  const version = async (name) => JSON.parse(await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'favor-test-app', private: true, type: 'module' }, null, 2));
  await runOk('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `vite@${await version('vite')}`,
    `webpack@${await version('webpack')}`], {
    cwd: app, env: npmEnv(), timeout: 180_000,
  });
  const installed = await installedPackageJson(app);
  assert.equal(installed.name, 'favor-attention');
  const { stdout } = await runOk(process.execPath, ['node-run.mjs'], { cwd: app, timeout: 60_000 });
  nodeResult = JSON.parse(stdout);
}, { timeout: 420_000 });

after(async () => {
  await browser?.close();
  await removeDir(work);
}, { timeout: 60_000 });

function assertClose(actual, expected, label) {
  assert.equal(actual.length, expected.length, `${label}: length`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Number.isFinite(actual[i]), `${label}[${i}] = ${actual[i]} is not finite`);
    const diff = Math.abs(actual[i] - expected[i]);
    assert.ok(diff <= TOLERANCE * Math.max(1, Math.abs(expected[i])),
      `${label}[${i}]: browser ${actual[i]} vs Node ${expected[i]} (|diff| = ${diff})`);
  }
}

// What each engine gets from tileRows 'auto' for the relaxed build: Chromium 156 (>= 136) keeps
// the 6-row tile's 12 accumulators in registers; Firefox 153's SpiderMonkey spills them (FAVOR+
// took 1.25-1.6x the time with 6 rows there), so it gets the 2-row tile.
const AUTO_TILE_ROWS = { chromium: 6, firefox: 2 };
// Time between a frozen worker's script fetch and its replacement's (worker-client.js replaces it
// after 10 s of silence), less a margin for the clocks.
const REPLACED_AFTER_MS = 9_000;
const ENGINE_NAME = { chromium: 'Chromium', firefox: 'Firefox' };

/**
 * The page's results against Node's, and a clean console. A cross-origin isolated page uses
 * the threaded build (headless Chromium and Firefox report the machine's cores, >= 2 in CI); any
 * other falls back to one thread and says why.
 */
function checkPage({ result, errors, responses }, label, { isolated = false, workerScript = /favor-worker[^/]*\.js/, engine = 'chromium' } = {}) {
  const name = ENGINE_NAME[engine];
  assert.deepEqual(errors, [], `${label}: errors in the page`);
  assert.equal(result.version, '0.1.0');
  assert.equal(result.exportedVersion, result.version, 'the exported version matches favor.info.version');
  assert.equal(result.simd, true, `${name} validates wasm SIMD, so the SIMD module is used by default`);
  // Chromium >= 114 and Firefox >= 146 run relaxed SIMD.
  assert.equal(result.relaxedSimd, true, `${name} validates relaxed SIMD, so the relaxed module is used by default`);
  assert.equal(result.scalar.simd, false, 'simd: false loads the scalar module');
  if (isolated) {
    assert.ok(result.threads > 1, `${label}: a cross-origin isolated page uses threads, got ${result.threads} (${result.threadsReason})`);
    assert.equal(result.threadsReason, null);
  } else {
    assert.equal(result.threads, 1, `${label}: threads`);
    assert.match(result.threadsReason, /^not cross-origin isolated/, `${label}: threadsReason`);
  }
  assert.equal(result.scalar.threads, 1);
  assert.equal(result.tileRows, AUTO_TILE_ROWS[engine], `${label}: tileRows`);
  assert.equal(result.worker.tileRows, AUTO_TILE_ROWS[engine], `${label}: the worker's tileRows`);
  assert.equal(result.scalar.tileRows, 4, `${label}: the scalar build's tileRows`);
  assert.deepEqual(result.dims, [32, 16]);
  for (const [name, data] of [['first', result.first], ['exact', result.exact], ['favor', result.favor]]) {
    assert.ok(data.every(Number.isFinite), `${label}: ${name} has non-finite values`);
  }
  assert.ok(Number.isFinite(result.relError) && result.relError > 0 && result.relError < 0.1,
    `${label}: FAVOR+ output relative error ${result.relError} (expected in (0, 0.1))`);
  assert.ok(Math.abs(result.relError - nodeResult.relError) <= TOLERANCE,
    `${label}: relative error ${result.relError} in the browser vs ${nodeResult.relError} in Node`);
  assertClose(result.first, nodeResult.first, `${label} first`);
  for (const key of ['exact', 'favor', 'causal']) {
    assertClose(result[key], nodeResult[key], `${label} ${key}`);
    assertClose(result.scalar[key], nodeResult.scalar[key], `${label} scalar ${key}`);
  }
  assertClose(result.decode, nodeResult.decode, `${label} decode`);
  assert.equal(result.bytesAfter, result.bytesBefore, `${label}: bytes in use after decode steps and dispose()`);
  assert.deepEqual(result.exactAfterDispose, result.exact, `${label}: exact attention after dispose()`);
  checkWorker(result, label, { isolated });
  // The worker script is fetched once, and again only where its worker froze while it loaded
  // (Firefox, web/load-watch.js) and was replaced after 10 s of silence (worker-client.js): a
  // fetch that long after the one before it.
  const script = responses.filter((r) => workerScript.test(new URL(r.url).pathname));
  const replaced = script.slice(1).filter((r, i) => r.at - script[i].at >= REPLACED_AFTER_MS).length;
  assert.equal(script.length, 1 + replaced, `${label}: the worker script is fetched once (and once more for each worker replaced): ${JSON.stringify(script)}`);
  // The page and its worker (and a replaced one, if it got that far) each fetch the module they use.
  const wasm = responses.filter((r) => new URL(r.url).pathname.endsWith('.wasm'));
  // Relaxed SIMD runs: the default is the relaxed build.
  const used = isolated ? 'relaxed-threads' : 'relaxed';
  const names = wasm.map((r) => /favor-(relaxed-threads|relaxed|simd-threads|simd|scalar)/.exec(r.url)?.[1]).sort();
  const byWorkers = names.filter((n) => n === used).length;
  assert.ok(byWorkers >= 2 && byWorkers <= 2 + replaced && names.length === byWorkers + 1 && names.includes('scalar'),
    `${label}: expected the ${isolated ? 'threaded ' : ''}relaxed-SIMD .wasm to be fetched by the page and by the worker, and the scalar one once, got ${JSON.stringify(wasm)}`);
  assert.equal(script[0].status, 200, `${label}: ${script[0].url}`);
  assert.match(script[0].type, /^(text|application)\/javascript\b/, `${label}: ${script[0].url} served as '${script[0].type}'`);
  for (const r of wasm) {
    assert.equal(r.status, 200, `${label}: ${r.url}`);
    assert.match(r.type, /^application\/wasm\b/, `${label}: ${r.url} served as '${r.type}'`);
  }
}

/**
 * loadFavor({ worker: true }) in the same page: the same bits as the page's own synchronous
 * calls (one module computes both; any thread count gives the same bits), threads as the page.
 */
function checkWorker({ worker, ...page }, label, { isolated }) {
  assert.ok(worker, `${label}: no worker results`);
  assert.equal(worker.version, page.version);
  assert.equal(worker.simd, true, `${label}: the worker uses the SIMD module`);
  if (isolated) {
    assert.ok(worker.threads > 1, `${label}: the worker of a cross-origin isolated page uses threads, got ${worker.threads} (${worker.threadsReason})`);
  } else {
    assert.equal(worker.threads, 1, `${label}: worker threads`);
    assert.match(worker.threadsReason, /^not cross-origin isolated/, `${label}: worker threadsReason`);
  }
  assert.deepEqual(worker.dims, page.dims);
  for (const key of ['exact', 'favor', 'causal', 'first']) {
    assert.deepEqual(worker[key], page[key], `${label}: the worker's ${key} differs from the page's synchronous call`);
  }
  assert.equal(worker.relError, page.relError, `${label}: relative error through the worker`);
}

describe('favor-attention in Chromium', () => {
  test('Node reference run', () => {
    assert.equal(nodeResult.simd, true);
    assert.equal(nodeResult.worker.simd, true);
    for (const key of ['exact', 'favor', 'causal']) assert.deepEqual(nodeResult.worker[key], nodeResult[key], `Node worker ${key}`);
    assert.ok(nodeResult.relError > 0 && nodeResult.relError < 0.1, `Node relative error ${nodeResult.relError}`);
    assert.equal(nodeResult.decode.length, 8 * 4 * 64);
    assert.ok(nodeResult.decode.every(Number.isFinite), 'Node decode outputs are finite');
    assert.equal(nodeResult.bytesAfter, nodeResult.bytesBefore, 'Node: bytes in use after decode steps and dispose()');
    assertClose(nodeResult.scalar.favor, nodeResult.favor, 'Node scalar vs SIMD favor');
  });

  // Vite's default bundles workers as classic (iife) scripts; the demo's config (and the
  // advice for older Vite in docs/api.md) as ES modules. The package's worker must work in both.
  for (const [name, config, outDir] of [
    ['', 'vite.zero.config.js', 'dist'],
    [' with worker: { format: \'es\' }', 'vite.worker-es.config.js', 'dist-es'],
  ]) {
    test(`Vite production build${name}`, { timeout: 120_000 }, async () => {
      const { stdout, stderr } = await runOk(process.execPath, [join(app, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', config, '--logLevel', 'warn'], {
        cwd: app, env: npmEnv(), timeout: 90_000,
      });
      assert.doesNotMatch(stdout + stderr, /favor/i, 'the build warns about nothing of favor-attention');
      const assets = await readdir(join(app, outDir, 'assets'));
      assert.ok(assets.some((f) => /^favor-simd-.*\.wasm$/.test(f)), `no SIMD .wasm emitted: ${assets}`);
      assert.ok(assets.some((f) => /^favor-scalar-.*\.wasm$/.test(f)), `no scalar .wasm emitted: ${assets}`);
      assert.ok(assets.some((f) => /^favor-simd-threads-.*\.wasm$/.test(f)), `no threaded .wasm emitted: ${assets}`);
      assert.ok(assets.some((f) => /^favor-worker-.*\.js$/.test(f)), `no worker script emitted: ${assets}`);
      for (const isolated of [false, true]) {
        const server = await serveStatic(join(app, outDir), { isolated });
        try {
          checkPage(await openResultPage(browser, server.url), `vite build${name}${isolated ? ', isolated' : ''}`, { isolated });
        } finally {
          await server.close();
        }
      }
    });
  }

  // webpack 5 emits the worker (new Worker(new URL(...))) as a chunk of its own and every .wasm
  // and the pthreads glue (new URL(...)) as assets.
  test('webpack 5 production build', { timeout: 120_000 }, async () => {
    const { stdout } = await runOk(process.execPath, ['webpack-build.mjs'], { cwd: app, env: npmEnv(), timeout: 90_000 });
    const { assets, worker, warnings } = JSON.parse(stdout);
    assert.deepEqual(warnings.filter((w) => /favor/i.test(w)), [], 'webpack warns about nothing of favor-attention');
    for (const name of ['favor-relaxed', 'favor-simd', 'favor-scalar', 'favor-simd-threads', 'favor-relaxed-threads']) {
      assert.ok(assets.some((f) => new RegExp(`^${name}-[0-9a-f]+\\.wasm$`).test(f)), `no ${name}.wasm emitted: ${assets}`);
    }
    assert.equal(worker.length, 1, `the worker is one chunk: ${worker} (assets ${assets})`);
    const workerScript = new RegExp(`/${worker[0].replace(/[.]/g, '\\.')}$`);
    for (const isolated of [false, true]) {
      const server = await serveStatic(join(app, 'dist-webpack'), { isolated });
      try {
        checkPage(await openResultPage(browser, server.url), `webpack${isolated ? ', isolated' : ''}`, { isolated, workerScript });
      } finally {
        await server.close();
      }
    }
  });

  test('worker: true where its worker cannot start, or its module cannot load, rejects with what failed; the synchronous API still works', { timeout: 90_000 }, async () => {
    const expected = /^rejected: Error: loadFavor: the favor-attention worker did not start: its script, favor-attention\/dist\/favor-worker\.js, must be served with the page .*Content-Security-Policy \(worker-src\)/;
    // A Content-Security-Policy that allows no worker.
    const strict = await serveStatic(app, { headers: { 'content-security-policy': "worker-src 'none'" } });
    try {
      const { result, errors } = await openResultPage(browser, `${strict.url}plain.html?script=worker-fails.js`);
      assert.match(result.outcome, expected);
      assert.ok(result.ms < 10_000, `rejected after ${result.ms} ms`);
      assert.equal(result.single, 0.5);
      assert.ok(errors.some((e) => /Content Security Policy/.test(e)), `the browser reports the CSP violation: ${errors}`);
    } finally {
      await strict.close();
    }
    // The worker starts, but its module does not load: the synchronous load's error.
    const plain = await serveStatic(app);
    try {
      const { result, errors } = await openResultPage(browser, `${plain.url}plain.html?script=worker-fails.js%3Fmissing-wasm`);
      assert.match(result.outcome, /^rejected: Error: loadFavor: could not load http:.*\/does-not-exist\.wasm: /);
      assert.equal(result.single, 0.5);
      assert.ok(errors.some((e) => /404.*does-not-exist\.wasm/.test(e)), `the 404 is in the page's errors: ${errors}`);
    } finally {
      await plain.close();
    }
    // A deployment of the Vite build that lost the worker script.
    const deployed = join(work, 'deployed');
    await cp(join(app, 'dist'), deployed, { recursive: true });
    const worker = (await readdir(join(deployed, 'assets'))).find((f) => /^favor-worker-.*\.js$/.test(f));
    assert.ok(worker, 'the build emitted the worker script');
    await rm(join(deployed, 'assets', worker));
    const server = await serveStatic(deployed);
    try {
      await assert.rejects(openResultPage(browser, server.url), (error) => {
        assert.match(error.message, /loadFavor: the favor-attention worker did not start: its script, favor-attention\/dist\/favor-worker\.js, must be served/);
        assert.match(error.message, new RegExp(`HTTP 404 for .*${worker}`));
        return true;
      });
    } finally {
      await server.close();
    }
  });

  for (const [name, config, isolated] of [
    ['with optimizeDeps.exclude (docs/api.md\'s vite.config.js)', 'vite.config.js', false],
    ['with no configuration (pre-bundled dependency)', 'vite.zero.config.js', false],
    ['sending COOP/COEP (cross-origin isolated: threads)', 'vite.isolated.config.js', true],
  ]) {
    test(`Vite dev server ${name}`, { timeout: 120_000 }, async () => {
      const dev = await startViteDev(app, config);
      try {
        checkPage(await openResultPage(browser, dev.url), `vite dev (${config})`, { isolated });
      } catch (error) {
        error.message += `\n--- vite dev output\n${tail(dev.output())}`;
        throw error;
      } finally {
        await dev.close();
      }
    });
  }

  test('no bundler: an import map to node_modules/favor-attention/web/browser.js', { timeout: 60_000 }, () => noBundler(browser, 'chromium'));

  test('the pthread worker script in web/browser.js is the build\'s dist/favor-simd-threads.worker.js', async () => {
    // The loader starts the workers from its own blob: copy (bundlers rewrite a worker file):
    // a new Emscripten or new link flags must not leave it stale.
    const installed = join(app, 'node_modules', 'favor-attention');
    const loader = await readFile(join(installed, 'web', 'browser.js'), 'utf8');
    const literal = /^const PTHREAD_WORKER_SOURCE = (".*");$/m.exec(loader)?.[1];
    assert.ok(literal, 'web/browser.js has no PTHREAD_WORKER_SOURCE line');
    const expected = await readFile(join(installed, 'dist', 'favor-simd-threads.worker.js'), 'utf8');
    assert.ok(JSON.parse(literal) === expected,
      'PTHREAD_WORKER_SOURCE differs from dist/favor-simd-threads.worker.js: paste JSON.stringify of the file into web/browser.js');
  });

  test('browser loader options: wasmUrl, locateFile, wasmBinary', { timeout: 60_000 }, () => loaderOptions(browser, 'chromium'));

  test('worker: true keeps the page animating during a ~2 s call; a synchronous call freezes it', { timeout: 120_000 }, () => workerAnimates(browser));

  test('threads under a CSP without worker-src blob: reject loadFavor instead of hanging', { timeout: 60_000 }, async () => {
    const server = await serveStatic(app, { isolated: true, headers: { 'content-security-policy': "worker-src 'self'" } });
    try {
      const { result } = await openResultPage(browser, `${server.url}plain.html?script=csp.js`);
      assert.equal(result.isolated, true, 'the page is cross-origin isolated');
      assert.match(result.outcome, /^rejected: FAVOR_LOAD_TIMEOUT .*worker-src blob:/, `loadFavor outcome: ${result.outcome}`);
      assert.ok(result.ms >= 2900 && result.ms < 10_000, `rejected after ${result.ms} ms, loadTimeout 3000`);
      assert.deepEqual(result.single, [1, 0.5], 'a single-threaded load works afterwards');
    } finally {
      await server.close();
    }
  });

  test('a wasmUrl that answers 404 rejects loadFavor instead of hanging', { timeout: 60_000 }, async () => {
    const server = await serveStatic(app);
    try {
      const { result, errors } = await openResultPage(browser, `${server.url}plain.html?script=missing.js`);
      assert.match(result.outcome, /^rejected: .*does-not-exist\.wasm/, `loadFavor outcome: ${result.outcome}`);
      assert.ok(errors.some((e) => e.includes('404')), `expected the 404 in the page's errors: ${errors}`);
    } finally {
      await server.close();
    }
  });
});

// Tests that run in both engines.

async function noBundler(b, engine) {
  for (const isolated of [false, true]) {
    const server = await serveStatic(app, { isolated });
    try {
      checkPage(await openResultPage(b, `${server.url}plain.html`), `${ENGINE_NAME[engine]}, no bundler${isolated ? ', isolated' : ''}`, { isolated, engine });
    } finally {
      await server.close();
    }
  }
}

async function loaderOptions(b, engine) {
  const server = await serveStatic(app);
  try {
    const { result, errors } = await openResultPage(b, `${server.url}plain.html?script=options.js`);
    assert.deepEqual(errors, []);
    assert.equal(result.relaxedSimd, true, `${ENGINE_NAME[engine]} runs relaxed SIMD: the default load is favor-relaxed.wasm`);
    for (const [name, variant] of Object.entries(result.variants)) {
      assert.equal(variant.maxAbsDiff, 0, `${name}: results differ from the ${variant.against} load by ${variant.maxAbsDiff}`);
    }
    assert.equal(result.variants.wasmUrlString.simd, true);
    assert.equal(result.variants.wasmUrlString.relaxedSimd, false);
    assert.equal(result.variants.wasmUrlRelaxed.relaxedSimd, true, 'info.relaxedSimd says what the module given is');
    assert.equal(result.variants.wasmUrlObject.simd, false);
    assert.equal(result.variants.wasmBinary.simd, false);
    assert.deepEqual(result.locatedFiles, ['favor-relaxed.wasm'], 'locateFile is asked for the relaxed module file name');
    assert.match(result.badWasmUrl, /^TypeError: loadFavor: wasmUrl/);
    assert.match(result.badWasmBinary, /^TypeError: loadFavor: wasmBinary/);
  } finally {
    await server.close();
  }
}

async function workerAnimates(b) {
  const server = await serveStatic(app);
  try {
    const { result, errors } = await openResultPage(b, `${server.url}plain.html?script=worker.js`, { timeout: 110_000 });
    assert.deepEqual(errors, []);
    assert.equal(result.maxAbsDiff, 0, 'the worker computes the same bits');
    assert.ok(result.throughWorker.ms > 1000, `the call took ${result.throughWorker.ms} ms (L = ${result.L})`);
    assert.ok(result.throughWorker.fps >= 50, `${result.throughWorker.fps.toFixed(1)} frames/s during the worker call`);
    assert.ok(result.synchronous.fps < 10, `${result.synchronous.fps.toFixed(1)} frames/s during the synchronous call`);
  } finally {
    await server.close();
  }
}

// The same package in Firefox: it must pick its builds by what the engine validates (relaxed SIMD
// in Firefox >= 146) and compute the same results as in Node.
describe('favor-attention in Firefox', () => {
  let firefox;
  before(async () => {
    firefox = await launchFirefox();
  }, { timeout: 90_000 });
  after(async () => {
    await firefox?.close();
  }, { timeout: 30_000 });

  test('no bundler: an import map to node_modules/favor-attention/web/browser.js', { timeout: 60_000 }, () => noBundler(firefox, 'firefox'));
  test('browser loader options: wasmUrl, locateFile, wasmBinary', { timeout: 60_000 }, () => loaderOptions(firefox, 'firefox'));
  test('worker: true keeps the page animating during a ~2 s call; a synchronous call freezes it', { timeout: 120_000 }, () => workerAnimates(firefox));
});

/** `vite` (dev) on 127.0.0.1, a port the OS picks, fresh dependency cache; resolves once it prints its URL. */
async function startViteDev(cwd, config) {
  const vite = join(cwd, 'node_modules', 'vite', 'bin', 'vite.js');
  const args = [vite, '--config', config, '--force', '--host', '127.0.0.1', '--port', '0', '--strictPort'];
  const child = spawn(process.execPath, args, {
    cwd, env: npmEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`vite dev did not print its URL within 30 s:\n${output}`)), 30_000);
    const onData = (chunk) => {
      output += chunk;
      const match = /Local:\s+(http:\/\/127\.0\.0\.1:\d+\/)/.exec(output.replace(/\x1b\[[0-9;]*m/g, ''));
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`vite dev exited (${code ?? signal}) before serving:\n${output}`));
    });
  }).catch(async (error) => {
    killGroup(child, 'SIGKILL');
    await exited;
    throw error;
  });
  return {
    url,
    output: () => output,
    close: async () => {
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
