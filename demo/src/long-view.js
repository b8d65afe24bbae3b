// The model mode's long-text view: the long-performer model continues the text by N characters
// with its exact key/value cache and with its FAVOR+ state, side by side, in the compute worker
// (compute-worker.js: 'long-generate', 'long-cancel'; it answers 'long-start', 'long-block' per
// pair of blocks, 'long-done'); live plots of characters per second and of the states' bytes
// against position; and the evaluation's bits per character against position
// (model/long-results.json, written by `npm run eval:long`, fetched by a static URL so that a
// build copies it). Every sentence about the measurements is derived from them.
import { fmt, fmtRate } from './colors.js';
import { BLOCK, binLabel, bytes, contextOnBins, evaluationNote, introNote, ms, n0, runInfo, runNote } from './long-notes.js';
import { LONG_LIMITS, LONG_MODEL } from './long-model.js';
import { drawPlot } from './plot.js';

// A static URL, so that a build copies the file (as the model files in model-view.js).
const RESULTS_URL = new URL('../../model/long-results.json', import.meta.url);
const EXACT = { color: '#1d2330', label: 'exact: key/value cache' };
const FAVOR = { color: '#e0711a', label: 'FAVOR+: running state (its exported W)' };
// The FAVOR+ series of a run whose state has a window (0: none).
const favorSeries = (window) => (window ? { ...FAVOR, label: `FAVOR+ over a window of ${n0(window)}: 4 running states (its exported W)` } : FAVOR);
// The evaluation's curves: colour and line per curve id (model/eval-long.mjs).
const CURVE_STYLE = {
  'softmax-full': { color: '#1d2330', marker: 'circle' },
  'softmax-window': { color: '#2f5fb3', marker: 'square', dash: '6 3' },
  'performer-favor': { color: '#e0711a', marker: 'diamond' },
  'performer-favor-window': { color: '#b8860b', marker: 'diamond', dash: '6 3' },
  'performer-exact': { color: '#8e44ad', marker: 'triangle', dash: '2 3' },
};

const $ = (sel) => document.querySelector(sel);

export class LongView {
  /**
   * post(message): to the compute worker; onN(n), onWindow(w): the number of characters or
   * FAVOR+'s window changed (for the URL).
   */
  constructor({ post, onN, onWindow }) {
    this.post = post;
    this.onN = onN;
    this.run = null;        // { id, n, blocks: [], ... } of the run shown
    this.available = null;  // whether the manifest has LONG_MODEL (null: not known yet)
    this.results = null;    // model/long-results.json, once fetched
    this.resultsState = 'idle';
    this.nextId = 1;
    this.frame = 0;
    this.section = $('#long-text');
    // each text follows its end while it grows, unless the reader scrolls up
    this.follow = { exact: true, favor: true };
    for (const which of ['exact', 'favor']) {
      const pre = $(`#long-${which}`);
      pre.addEventListener('scroll', () => { this.follow[which] = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24; }, { passive: true });
    }
    $('#long-run').addEventListener('click', () => this.start());
    $('#long-cancel').addEventListener('click', () => this.cancel());
    // A length typed in is the next run's at once (generate may be the click that ends the typing).
    $('#long-n').addEventListener('change', (e) => {
      const v = Math.round(Number(e.target.value));
      if (Number.isFinite(v) && v >= LONG_LIMITS.min && v <= LONG_LIMITS.max) {
        this.n = v;
        onN(v);
      } else {
        e.target.value = String(this.n);
      }
    });
    // FAVOR+'s window for the next run: 0 (the whole prefix) or a multiple of 4
    $('#long-window').addEventListener('change', (e) => {
      this.window = Number(e.target.value);
      onWindow(this.window);
    });
    this.window = 0;
    this.n = LONG_LIMITS.default;
    this.text = '';
    this.seed = 1;
    this.buttons();
    this.drawRuns();
  }

  /** Shown in model mode only; the evaluation's curves are fetched the first time. */
  show(on) {
    const was = !this.section.hidden;
    this.section.hidden = !on;
    // drawn while hidden at a guessed size: again once laid out (after the resize observer's report)
    if (on && !was) requestAnimationFrame(() => setTimeout(() => this.redraw(), 0));
    if (on && this.resultsState === 'idle') this.loadResults();
  }

  /** The settings it uses: N, FAVOR+'s window, the text (its prompt) and the sampling seed. */
  set({ n, window, text, seed }) {
    this.n = n;
    this.window = window;
    this.text = text;
    this.seed = seed;
    $('#long-n').value = String(n);
    $('#long-window').value = String(window);
  }

  /** The manifest's models: the view needs LONG_MODEL. */
  setModels(models) {
    const record = models.find((m) => m.name === LONG_MODEL);
    this.available = Boolean(record);
    if (record) this.record = record;
    this.buttons();
    if (!this.run) this.status(record ? '' : `needs the ${LONG_MODEL} model in train/models/manifest.json`);
  }

  // A text the model cannot read (too short): nothing to generate from until it can.
  setTextValid(ok) {
    this.textValid = ok;
    this.buttons();
  }

  buttons() {
    const running = this.run?.state === 'running';
    $('#long-run').disabled = running || !this.available || this.textValid === false;
    $('#long-cancel').disabled = !running;
    this.section.dataset.state = this.run?.state ?? 'idle';
  }

  status(text) { $('#long-status').textContent = text; }

  start() {
    if (this.run?.state === 'running' || !this.available) return;
    const id = this.nextId++;
    this.run = { id, n: this.n, state: 'running', blocks: [], exact: '', favor: '', t0: performance.now(), start: null };
    this.follow = { exact: true, favor: true };
    for (const which of ['exact', 'favor']) {
      $(`#long-${which}`).replaceChildren();
      $(`#long-${which}`).dataset.chars = '0';
      $(`#long-${which}-info`).textContent = '';
    }
    $('#long-progress').value = 0;
    this.status(`loading the ${LONG_MODEL} model…`);
    this.buttons();
    this.drawRuns();
    this.post({ kind: 'long-generate', id, params: { text: this.text, n: this.n, block: BLOCK, seed: this.seed, window: this.window } });
  }

  cancel() {
    if (this.run?.state !== 'running') return;
    this.post({ kind: 'long-cancel', id: this.run.id });
    this.status('cancelling…');
  }

  /** A model's weights loading for this view (the worker's 'progress' with purpose 'long'). */
  progress({ fraction, bytes: got, total }) {
    if (this.run?.state === 'running' && !this.run.start) this.status(`loading the ${LONG_MODEL} model: ${fmt(got / 1e6, 2)} of ${fmt(total / 1e6, 2)} MB`);
    if (fraction >= 1 && this.run?.state === 'running' && !this.run.start) this.status('prefill of the prompt…');
  }

  /** The worker's 'long-start', 'long-block' and 'long-done' messages. */
  message(msg) {
    const run = this.run;
    if (!run || msg.id !== run.id) return;  // an earlier run's
    if (msg.type === 'long-start') {
      run.start = msg;
      for (const which of ['exact', 'favor']) {
        const tail = document.createElement('span'), body = document.createElement('span');
        tail.className = 'gen-prompt';
        tail.textContent = `…${msg.prompt}`;
        body.className = 'gen-text';
        $(`#long-${which}`).replaceChildren(tail, body);
      }
      this.status(`generating: 0 of ${n0(run.n)} characters`);
    } else if (msg.type === 'long-block') {
      // position: characters in the text after the block (prompt + generated); from: before it
      const position = run.start.promptLength + msg.done;
      run.blocks.push({ done: msg.done, from: position - msg.exact.text.length, position, exact: msg.exact, favor: msg.favor });
      for (const which of ['exact', 'favor']) {
        run[which] += msg[which].text;
        const pre = $(`#long-${which}`);
        pre.querySelector('.gen-text').append(msg[which].text);
        pre.dataset.chars = String(run[which].length);
        if (this.follow[which]) pre.scrollTop = pre.scrollHeight;
      }
      $('#long-progress').value = msg.done / run.n;
      this.status(`generating: ${n0(msg.done)} of ${n0(run.n)} characters, ${fmt((performance.now() - run.t0) / 1000, 2)} s`);
      this.schedule();
    } else if (msg.type === 'long-done') {
      run.state = msg.error ? 'error' : msg.cancelled ? 'cancelled' : 'done';
      const took = fmt((performance.now() - run.t0) / 1000, 2);
      this.status(msg.error ? `failed: ${msg.error}` : msg.cancelled ? `cancelled after ${n0(msg.done)} of ${n0(run.n)} characters (${took} s); what was generated is kept`
        : `done: ${n0(msg.done)} characters with each, ${took} s`);
      if (msg.error) console.error('favor-attention demo: long text', msg.error);
      // the measurements, for scripts that read them (bench/long-generation-browser.mjs)
      this.section.dataset.blocks = JSON.stringify(run.blocks.map((b) => ({ position: b.position,
        exact: { chars: b.exact.text.length, ms: b.exact.ms, stateBytes: b.exact.stateBytes },
        favor: { chars: b.favor.text.length, ms: b.favor.ms, stateBytes: b.favor.stateBytes } })));
      $('#long-progress').value = msg.done / run.n;
      this.buttons();
      this.drawRuns();
    }
  }

  /** Every plot again (the page's width changed). */
  redraw() {
    if (this.section.hidden) return;
    for (const which of ['exact', 'favor']) if (this.follow[which]) $(`#long-${which}`).scrollTop = 1e9;
    this.drawRuns();
    this.drawResults();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.drawRuns(); });
  }

  // The live plots: characters per second and the states' bytes against position, and the notes.
  drawRuns() {
    const run = this.run, blocks = run?.blocks ?? [], start = run?.start;
    // the texts once a run starts, the plots once it has a block
    this.section.classList.toggle('has-run', Boolean(run));
    const shown = this.section.classList.contains('has-blocks');
    this.section.classList.toggle('has-blocks', blocks.length > 0);
    // drawn before they were laid out: again at their size
    if (!shown && blocks.length) requestAnimationFrame(() => setTimeout(() => this.drawRuns(), 0));
    const series = (key, which, title) => blocks.map((b) => [b.position, b[which][key], title(b, b[which])]);
    const rateOf = (b, x) => `position ${n0(b.position)}: ${fmtRate(x.charsPerSecond)} characters/s (${x.text.length} in ${ms(x.ms)})`;
    const mem = (b, x) => `position ${n0(b.position)}: ${bytes(x.stateBytes)}`;
    const context = start?.context ?? this.record?.context;
    const x = { log: false, label: 'position in the text (prompt + generated characters)', format: (v) => n0(v),
      ...(start && { domain: [start.promptLength, start.promptLength + run.n] }) };
    const vlines = start && context ? [{ x: context, label: `training context ${n0(context)}`, color: '#777' }] : [];
    const rateSvg = $('#long-rate'), memSvg = $('#long-memory');
    const exactRate = series('charsPerSecond', 'exact', rateOf), favorRate = series('charsPerSecond', 'favor', rateOf);
    drawPlot(rateSvg, {
      x, y: { log: false, label: 'characters per second', format: n0, ...(blocks.length && { domain: [0, 1.08 * Math.max(...blocks.flatMap((b) => [b.exact.charsPerSecond, b.favor.charsPerSecond]))] }) },
      series: [{ ...EXACT, points: exactRate, width: 1.8 }, { ...favorSeries(this.run?.start?.window), points: favorRate, width: 1.8 }],
      vlines, legendRoot: $('#long-legend'),
    });
    // the memory curves start where the note's figures do: the states after the prompt's prefill
    const memory = (which) => (blocks.length ? [[start.promptLength, start.stateBytes[which], `position ${n0(start.promptLength)} (the prompt): ${bytes(start.stateBytes[which])}`]] : [])
      .concat(series('stateBytes', which, mem));
    const exactMemory = memory('exact');
    drawPlot(memSvg, {
      x, y: { log: true, label: 'bytes, all layers (log)' },
      series: [{ ...EXACT, points: exactMemory, width: 1.8 }, { ...favorSeries(this.run?.start?.window), points: memory('favor'), width: 1.8 }],
      vlines,
    });
    rateSvg.dataset.exactPoints = String(exactRate.length);
    rateSvg.dataset.favorPoints = String(favorRate.length);
    memSvg.dataset.points = String(exactMemory.length);
    memSvg.dataset.first = exactMemory.length ? `${exactMemory[0][0]} ${exactMemory[0][1]}` : '';
    this.drawNote();
  }

  drawNote() {
    const run = this.run, start = run?.start, blocks = run?.blocks ?? [];
    $('#long-note').textContent = start ? runNote({ start, blocks, seed: this.seed, results: this.results }) : introNote(this.record);
    const info = start && blocks.length ? runInfo(run) : { exact: '', favor: '' };
    for (const which of ['exact', 'favor']) $(`#long-${which}-info`).textContent = info[which];
  }

  async loadResults() {
    this.resultsState = 'loading';
    try {
      const response = await fetch(RESULTS_URL);
      if (!response.ok) throw new Error(`${response.status}`);
      this.results = await response.json();
      this.resultsState = 'loaded';
    } catch (e) {
      this.resultsState = 'missing';
      this.resultsError = String(e?.message ?? e);
    }
    this.drawResults();
  }

  // The evaluation's held-out bits per character against position: one point per position bin
  // (mean over seeds, band ±1 s.d.), the bins equally spaced.
  drawResults() {
    const r = this.results, svg = $('#long-bpc');
    if (!r) {
      drawPlot(svg, { x: { log: false, label: 'position bin' }, y: { log: false, label: 'bits per character' }, series: [],
        empty: this.resultsState === 'missing' ? 'model/long-results.json is not there: npm run eval:long writes it' : 'loading…' });
      $('#long-bpc-note').textContent = this.resultsState === 'missing'
        ? `The evaluation's results (model/long-results.json) could not be loaded (${this.resultsError}): npm run eval:long writes them.` : '';
      $('#long-bpc-legend').replaceChildren();
      return;
    }
    const bins = r.bins;
    const series = r.curves.map((c) => ({
      label: `${c.label} (${c.seeds.length} seed${c.seeds.length > 1 ? 's' : ''})`, ...(CURVE_STYLE[c.id] ?? { color: '#555' }), width: 1.8,
      points: c.bins.map((b, i) => [i, b.mean, `${c.label}, positions ${binLabel(bins[i])}: ${fmt(b.mean, 3)} ± ${fmt(b.sd, 2)} bits/char (n = ${b.n})`]),
      band: c.bins.map((b, i) => [i, b.mean - b.sd, b.mean + b.sd]),
    }));
    const ctx = contextOnBins(r);
    drawPlot(svg, {
      x: { log: false, domain: [-0.3, bins.length - 0.7], label: 'position in the sequence (characters, bins)',
        format: (v) => (Math.abs(v - Math.round(v)) < 1e-6 && bins[Math.round(v)] ? binLabel(bins[Math.round(v)]) : '') },
      y: { log: false, label: 'bits per character' },
      series,
      vlines: ctx === null ? [] : [{ x: ctx, label: `training context ${n0(r.context)}`, color: '#777' }],
      legendRoot: $('#long-bpc-legend'),
    });
    svg.dataset.curves = String(series.length);
    $('#long-bpc-note').textContent = evaluationNote(r);
  }
}
