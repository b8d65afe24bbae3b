// Headless Firefox (Debian's firefox-esr) driven over WebDriver BiDi, the W3C protocol Firefox
// speaks itself, for the tests and benchmarks that run a page in Firefox. playwright-core's own
// BiDi client (channel 'moz-firefox') follows newer Firefox releases: with 153 ESR it fails at
// newPage() on a command that release lacks (emulation.setMediaFeaturesOverride). This is the
// little the tests use: open a page, evaluate a function in it, and collect its console errors,
// uncaught errors and responses, shaped like playwright's calls so that the same code drives both.
//
//   const firefox = await launchFirefox();
//   const page = await firefox.newPage();
//   await page.goto(url);
//   const value = await page.evaluate((arg) => ..., arg);  // arg and the value go through JSON
//   const found = await page.waitForFunction(() => ..., { timeout });  // its first truthy value
//   page.errors, page.responses; await page.close(); await firefox.close();
//
// Needs a global WebSocket: Node >= 22, or Node 20 with --experimental-websocket.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const FIREFOX = process.env.FAVOR_FIREFOX || '/usr/bin/firefox-esr';

// A quiet profile: no first-run pages, update checks or telemetry pings during a test.
const PREFS = {
  'app.update.auto': false,
  'app.update.enabled': false,
  'browser.shell.checkDefaultBrowser': false,
  'browser.startup.homepage_override.mstone': 'ignore',
  'datareporting.policy.dataSubmissionEnabled': false,
  'toolkit.telemetry.reportingpolicy.firstRun': false,
  'browser.newtabpage.enabled': false,
  'browser.startup.page': 0,
};

export async function launchFirefox({ executablePath = FIREFOX, timeout = 60_000 } = {}) {
  if (!existsSync(executablePath)) {
    throw new Error(`Firefox is required here but ${executablePath} does not exist. ` +
      'Install it with `scripts/ensure-deps.sh browser` (apt-get install firefox-esr); `npm test` does this.');
  }
  if (typeof WebSocket !== 'function') {
    throw new Error(`driving Firefox needs a global WebSocket: Node >= 22, or Node ${process.versions.node} with --experimental-websocket`);
  }
  const profile = await mkdtemp(join(tmpdir(), 'favor-firefox-'));
  await writeFile(join(profile, 'user.js'),
    Object.entries(PREFS).map(([name, value]) => `user_pref(${JSON.stringify(name)}, ${JSON.stringify(value)});\n`).join(''));
  // HOME inside the profile: Firefox refuses to start as root with a HOME root does not own.
  const child = spawn(executablePath, ['--headless', '--no-remote', '--profile', profile, '--remote-debugging-port', '0'], {
    detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: profile, MOZ_HEADLESS: '1' },
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    await exited;
    await rm(profile, { recursive: true, force: true });
  };
  let output = '';
  let socket;
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Firefox did not open its WebDriver BiDi port within ${timeout} ms:\n${output}`)), timeout);
      const onData = (chunk) => {
        output += chunk;
        const match = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(output);
        if (match) clearTimeout(timer), resolve(match[1]);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`Firefox exited (${code ?? signal}) before opening its WebDriver BiDi port:\n${output}`));
      });
    });
    socket = new WebSocket(`${url}/session`);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error(`could not connect to Firefox's WebDriver BiDi port at ${url}`));
    });
  } catch (error) {
    await stop();
    throw error;
  }

  let lastId = 0;
  const pending = new Map();
  const listeners = new Set();
  socket.onmessage = ({ data }) => {
    const message = JSON.parse(data);
    if (message.type === 'event') {
      for (const listener of listeners) listener(message.method, message.params);
      return;
    }
    const call = pending.get(message.id);
    if (!call) return;
    pending.delete(message.id);
    if (message.type === 'error') call.reject(new Error(`Firefox: ${call.method}: ${message.error}: ${message.message}`));
    else call.resolve(message.result);
  };
  socket.onclose = () => {
    for (const call of pending.values()) call.reject(new Error(`Firefox: ${call.method}: the connection closed`));
    pending.clear();
  };
  const send = (method, params = {}, ms = timeout) => new Promise((resolve, reject) => {
    const id = ++lastId;
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error(`Firefox: ${method}: no answer within ${ms} ms`));
    }, ms);
    pending.set(id, {
      method,
      resolve: (value) => (clearTimeout(timer), resolve(value)),
      reject: (error) => (clearTimeout(timer), reject(error)),
    });
    socket.send(JSON.stringify({ id, method, params }));
  });

  let version;
  try {
    version = (await send('session.new', { capabilities: {} })).capabilities.browserVersion;
    await send('session.subscribe', { events: ['log.entryAdded', 'network.responseCompleted'] });
  } catch (error) {
    socket.close();
    await stop();
    throw error;
  }

  async function newPage() {
    const { context } = await send('browsingContext.create', { type: 'tab' });
    const errors = [];
    const responses = [];
    // Events of this tab and of the workers it starts (their events name no browsing context).
    const ours = (source) => !source?.context || source.context === context;
    const listener = (method, params) => {
      if (method === 'log.entryAdded' && ours(params.source)) {
        if (params.type === 'javascript') errors.push(`page error: ${params.text}`);
        else if (params.level === 'error') errors.push(`console.error: ${params.text}`);
      } else if (method === 'network.responseCompleted' && (!params.context || params.context === context)) {
        const { url, status, mimeType = '' } = params.response;
        responses.push({ url, status, type: mimeType, at: Date.now() });
        if (status >= 400) errors.push(`HTTP ${status} for ${url}`);
      }
    };
    listeners.add(listener);
    return {
      errors,
      responses,
      async goto(url, { timeout: ms = timeout } = {}) {
        await send('browsingContext.navigate', { context, url, wait: 'complete' }, ms);
      },
      // fn runs in the page as playwright's page.evaluate runs it: its source, called with arg.
      async evaluate(fn, arg, { timeout: ms = timeout } = {}) {
        const expression = `(async () => JSON.stringify({ value: await (${fn})(${JSON.stringify(arg)}) }))()`;
        const answer = await send('script.evaluate', { expression, target: { context }, awaitPromise: true }, ms);
        if (answer.type === 'exception') {
          const details = answer.exceptionDetails;
          throw new Error(`Firefox: evaluate: ${details.text}${details.stackTrace?.callFrames?.length
            ? `\n${details.stackTrace.callFrames.map((f) => `    at ${f.functionName || '<anonymous>'} (${f.url}:${f.lineNumber + 1})`).join('\n')}` : ''}`);
        }
        return JSON.parse(answer.result.value).value;
      },
      // Polls fn in the page until it returns a truthy value (BiDi has no wait for a condition).
      async waitForFunction(fn, { timeout: ms = timeout, what = 'the condition' } = {}) {
        const deadline = Date.now() + ms;
        for (;;) {
          const value = await this.evaluate(fn);
          if (value) return value;
          if (Date.now() > deadline) {
            throw new Error(`Firefox: waited ${ms} ms for ${what}; errors in the page: ${errors.join(' | ') || 'none'}`);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
      // The viewport's size in CSS pixels, and a PNG (a Buffer) of what it shows.
      async setViewport(width, height) {
        await send('browsingContext.setViewport', { context, viewport: { width, height } });
      },
      async screenshot() {
        const { data } = await send('browsingContext.captureScreenshot', { context });
        return Buffer.from(data, 'base64');
      },
      async close() {
        listeners.delete(listener);
        await send('browsingContext.close', { context }).catch(() => {});
      },
    };
  }

  return {
    engine: 'firefox',
    version: () => version,
    newPage,
    async close() {
      await send('browser.close', {}, 10_000).catch(() => {});
      socket.close();
      await stop();
    },
  };
}
