// Shared by the package and browser tests: run commands with a time limit, pack the package,
// make temp dirs, a PATH without the Emscripten toolchain, a static server, headless Chromium.
// Not a test file (node --test only runs *.test.mjs here).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, symlink, mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
// FAVOR_CHROMIUM overrides the path (e.g. to check the missing-browser message).
export const CHROMIUM = process.env.FAVOR_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync',
];

/** The files `npm pack` must put in the tarball (LICENSE* is allowed in addition). */
export const EXPECTED_FILES = [
  'README.md',
  'dist/favor-relaxed-threads.wasm',
  'dist/favor-relaxed.wasm',
  'dist/favor-scalar.wasm',
  'dist/favor-simd-threads.js',
  'dist/favor-simd-threads.wasm',
  'dist/favor-simd-threads.worker.js',
  'dist/favor-simd.js',
  'dist/favor-simd.wasm',
  'dist/favor-worker.js',
  'docs/api.md',
  'package.json',
  'web/api.js',
  'web/errors.js',
  'web/browser.js',
  'web/favor-worker-node.js',
  'web/heap.js',
  'web/index.d.ts',
  'web/load-watch.js',
  'web/load.js',
  'web/node-worker-shim.js',
  'web/node.js',
  'web/operations.js',
  'web/out.js',
  'web/validate.js',
  'web/worker-client.js',
  'web/worker-host.js',
  'web/worker-messages.js',
];

/**
 * Runs a command (no shell) and resolves to { code, signal, stdout, stderr }. On timeout the
 * whole process group it started is killed and the promise rejects with the output so far.
 */
export function run(command, args, { cwd = ROOT, env = process.env, timeout = 120_000, input } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGKILL');
    }, timeout);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not start ${command}: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) {
        reject(new Error(`${command} ${args.join(' ')} timed out after ${timeout} ms\n--- stdout\n${tail(stdout)}\n--- stderr\n${tail(stderr)}`));
      } else {
        resolvePromise({ code, signal, stdout, stderr });
      }
    });
    if (input !== undefined) {
      child.stdin.on('error', () => {});  // EPIPE when the child exits without reading
      child.stdin.end(input);
    }
  });
}

/** Like run(), but rejects unless the command exits 0. */
export async function runOk(command, args, options) {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${result.code ?? result.signal} in ${options?.cwd ?? ROOT}\n` +
      `--- stdout\n${tail(result.stdout)}\n--- stderr\n${tail(result.stderr)}`);
  }
  return result;
}

export function tail(text, max = 4000) {
  return text.length > max ? `...${text.slice(-max)}` : text;
}

/** Kills the process group of a child started with detached: true (only what we started). */
export function killGroup(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try { child.kill(signal); } catch { /* already gone */ }
  }
}

export async function makeTempDir(prefix) {
  return mkdtemp(join(tmpdir(), `favor-attention-${prefix}-`));
}

export async function removeDir(dir) {
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** The environment for npm in tests: quiet, non-interactive, no update checks. */
export function npmEnv(extra = {}) {
  return {
    ...process.env,
    CI: 'true',
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_loglevel: 'warn',
    ...extra,
  };
}

/**
 * `npm pack` of the working tree into dest (prepack rebuilds the wasm incrementally).
 * Returns the tarball's absolute path. The pack's stdout also carries the build's output,
 * so the tarball is found in dest rather than parsed from `npm pack --json`.
 */
export async function packTarball(dest) {
  await runOk('npm', ['pack', '--pack-destination', dest], { cwd: ROOT, env: npmEnv(), timeout: 300_000 });
  const tarballs = (await readdir(dest)).filter((name) => name.endsWith('.tgz'));
  if (tarballs.length !== 1) throw new Error(`npm pack left ${tarballs.length} tarballs in ${dest}: ${tarballs}`);
  return join(dest, tarballs[0]);
}

/** The file list of a tarball, without the leading package/. */
export async function tarballFiles(tarball) {
  const { stdout } = await runOk('tar', ['-tzf', tarball]);
  return stdout.split('\n').filter(Boolean).map((line) => line.replace(/^package\//, '')).sort();
}

/**
 * A directory holding only symlinks to node and npm: as PATH it proves a consumer needs no
 * Emscripten (Debian puts emcc in /usr/bin, so /usr/bin cannot be on that PATH).
 */
export async function makeNodeOnlyBin(parent) {
  const bin = join(parent, 'bin');
  await mkdir(bin, { recursive: true });
  const npmCli = resolve(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  await symlink(process.execPath, join(bin, 'node'));
  await symlink(existsSync(npmCli) ? npmCli : await which('npm'), join(bin, 'npm'));
  const probe = await run('/bin/sh', ['-c', 'command -v emcc || command -v em++ || command -v emcmake || command -v clang'], {
    env: { PATH: bin },
  });
  if (probe.code === 0) throw new Error(`the node-only PATH ${bin} still reaches ${probe.stdout.trim()}`);
  return bin;
}

async function which(name) {
  const { stdout } = await runOk('/bin/sh', ['-c', `command -v ${name}`]);
  return stdout.trim();
}

/** `npm init -y` then `npm install` of the given specs (tarball paths, name@version) in dir. */
export async function npmInstall(dir, specs, { env = npmEnv(), timeout = 180_000 } = {}) {
  await runOk('npm', ['init', '-y'], { cwd: dir, env, timeout: 60_000 });
  await runOk('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...specs], { cwd: dir, env, timeout });
}

/** The package's favor-attention version in the installed tree, to make sure it is the tarball's. */
export async function installedPackageJson(dir) {
  return JSON.parse(await readFile(join(dir, 'node_modules', 'favor-attention', 'package.json'), 'utf8'));
}

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};

/**
 * A static file server for root on 127.0.0.1 (random port). Records every request with its
 * status and content type. close() stops it and drops open connections. isolated: send COOP/COEP.
 */
export async function serveStatic(root, { isolated = false, headers = {} } = {}) {
  // COOP/COEP make the page cross-origin isolated (SharedArrayBuffer, so the threaded build).
  const isolation = {
    ...(isolated ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' } : {}),
    ...headers,
  };
  const requests = [];
  const server = createServer(async (req, res) => {
    const record = { method: req.method, url: req.url, status: 0, type: '' };
    requests.push(record);
    const send = (status, type, body) => {
      record.status = status;
      record.type = type;
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...isolation });
      res.end(body);
    };
    try {
      const pathname = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
      let file = resolve(root, `.${pathname}`);
      if (file !== root && !file.startsWith(root + sep)) return send(403, 'text/plain', 'forbidden');
      if ((await stat(file).catch(() => null))?.isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file).catch(() => null);
      if (body === null) return send(404, 'text/plain', 'not found');
      send(200, MIME[extname(file)] ?? 'application/octet-stream', req.method === 'HEAD' ? undefined : body);
    } catch (error) {
      send(500, 'text/plain', String(error));
    }
  });
  await new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolvePromise);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    close: () => new Promise((resolvePromise) => {
      server.closeAllConnections();
      server.close(() => resolvePromise());
    }),
  };
}

/** Headless Chromium through playwright-core; fails (never skips) when Chromium is missing. */
export async function launchChromium() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is required for the browser tests but ${CHROMIUM} does not exist. ` +
      'Install it with `scripts/ensure-deps.sh browser` (apt-get install chromium); `npm test` does this.');
  }
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/**
 * Opens url in a fresh page, waits for #result[data-status] and returns { result, errors,
 * responses }: the parsed JSON in #result, every console error / page error / failed request,
 * and the responses (url, status, content type, and when it came: Date.now()).
 */
export async function openResultPage(browser, url, { timeout = 60_000 } = {}) {
  if (browser.engine === 'firefox') return openFirefoxResultPage(browser, url, { timeout });
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  const responses = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console.error: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page error: ${error.stack ?? error.message}`));
  page.on('requestfailed', (request) => errors.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
  page.on('response', (response) => {
    responses.push({ url: response.url(), status: response.status(), type: response.headers()['content-type'] ?? '', at: Date.now() });
    if (response.status() >= 400) errors.push(`HTTP ${response.status()} for ${response.url()}`);
  });
  try {
    await page.goto(url, { waitUntil: 'load', timeout });
    const element = await page.waitForSelector('#result[data-status]', { state: 'attached', timeout });
    const status = await element.getAttribute('data-status');
    const text = await element.textContent();
    if (status !== 'ok') throw new Error(`the page at ${url} reported an error: ${text}`);
    return { result: JSON.parse(text), errors, responses };
  } catch (error) {
    if (errors.length) error.message += `\n--- errors in the page\n${errors.join('\n')}`;
    throw error;
  } finally {
    await context.close();
  }
}

// openResultPage in Firefox (scripts/firefox.mjs): the page collects its errors and responses itself.
async function openFirefoxResultPage(firefox, url, { timeout }) {
  const page = await firefox.newPage();
  try {
    await page.goto(url, { timeout });
    const found = await page.waitForFunction(() => {
      const element = document.querySelector('#result[data-status]');
      return element && { status: element.dataset.status, text: element.textContent };
    }, { timeout, what: `#result[data-status] at ${url}` });
    if (found.status !== 'ok') throw new Error(`the page at ${url} reported an error: ${found.text}`);
    return { result: JSON.parse(found.text), errors: page.errors, responses: page.responses };
  } catch (error) {
    if (page.errors.length) error.message += `\n--- errors in the page\n${page.errors.join('\n')}`;
    throw error;
  } finally {
    await page.close();
  }
}
