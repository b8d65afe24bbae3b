// Model mode on the main thread: its controls (text, model, layer, head, exported W), the grid of
// every head (exact A, framed by the approximation's error), the effect on the model (bits per
// character, next-character predictions) and generation side by side.
import { modelLabel } from '../../model/model-label.js';
import { MASKED_COLOR, fmt, fmtRate } from './colors.js';
import { trainedNote } from './captions.js';
import { escapeHtml, shownChar } from './text.js';

// A held-out passage: the first 256 characters of chapter 123 (the models never saw chapters
// 122-135 and the epilogue), the models' whole context.
export const DEFAULT_TEXT = "During the most violent shocks of the Typhoon, the man at the Pequod's jaw-bone tiller had several times been reelingly hurled to the deck by its spasmodic motions, even though preventer tackles had been attached to it\u2014for they were slack\u2014because some play";

const $ = (sel) => document.querySelector(sel);

// Error of a head under the approximation, and the color of its frame: green (small) to red.
const headError = (e) => e.meanRowKL;
export function frameColor(err) {
  const t = Math.max(0, Math.min(1, Math.log10(Math.max(err, 1e-4) / 1e-3) / 3));  // 1e-3 .. 1
  const hue = 120 * (1 - t);
  return `hsl(${hue}, 70%, 42%)`;
}

// At most four characters, so that a cell's label never outgrows it.
const short = (x) => (!(x >= 0.01) ? '<.01' : x < 1 ? x.toFixed(2).slice(1) : x < 10 ? x.toFixed(1) : x < 1000 ? x.toFixed(0) : '≥1k');
const show = (c) => escapeHtml(shownChar(c));
// The last characters up to the row, about 16, from the start of a word ("…because some play",
// not "…ecause some play"), with an ellipsis where the text goes on before them.
export function quote(chars, row) {
  let start = Math.max(0, row - 15);
  // the nearest word start at or before it: after a space or a newline, or the text's start
  const word = start > 0 ? Math.max(chars.lastIndexOf(' ', start - 1), chars.lastIndexOf('\n', start - 1)) + 1 : 0;
  if (start - word <= 8) start = word;
  return `${start > 0 ? '…' : ''}${chars.slice(start, row + 1).replace(/\n/g, '⏎')}`;
}

// The grid is one tab stop (the selected head's cell); arrow keys, Home and End move the focus
// between cells as they are laid out (`columns` a row), Enter or Space inspects the focused head.
// Returns the cell to focus, or null for a key that does not move.
export function gridMove(index, key, { count, columns }) {
  const to = { ArrowLeft: index - 1, ArrowRight: index + 1, ArrowUp: index - columns, ArrowDown: index + columns, Home: 0, End: count - 1 }[key];
  return to === undefined ? null : Math.max(0, Math.min(count - 1, to));
}

// A model's entry in the model menu: its name, its title without the name again, and its
// held-out figure ("performer: trained with causal FAVOR+ (held-out 2.11 bits/char)").
export function modelOption(model) {
  return `${modelLabel(model)} (held-out ${fmt(model.heldOutBpc, 3)} bits/char)`;
}

export class ModelPanel {
  constructor({ onSelect, onGenerate }) {
    this.onSelect = onSelect;
    this.grid = $('#heads-grid');
    this.cells = [];
    this.grid.addEventListener('keydown', (e) => {
      const at = this.cells.indexOf(document.activeElement);
      const to = at < 0 ? null : gridMove(at, e.key, { count: this.cells.length, columns: Number(this.grid.style.getPropertyValue('--heads')) || 4 });
      if (to === null) return;
      e.preventDefault();
      this.cells.forEach((c, x) => { c.tabIndex = x === to ? 0 : -1; });
      this.cells[to].focus();
    });
    this.models = null;
    this.genKey = null;  // the settings the shown continuation was generated with
    $('#gen-run').addEventListener('click', () => {
      $('#gen-note').textContent = 'generating…';
      onGenerate();
    });
    const legend = $('#legend-grid');
    legend.innerHTML = '<div class="legend-title">grid frame: the head\'s mean row KL(A‖Â), log scale</div>' +
      `<div class="frame-bar" style="background: linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map((t) => frameColor(10 ** (-3 + 3 * t))).join(', ')})"></div>` +
      '<div class="ticks"><span style="left:0%">≤ 10⁻³</span><span style="left:50%">0.03</span><span style="left:100%">≥ 1</span></div>';
  }

  // A text the model cannot read (too short): nothing to generate from until it can.
  setTextValid(ok) {
    $('#gen-run').disabled = !ok;
  }

  show(on) {
    $('#model-settings').hidden = !on;
    $('#model-view').hidden = !on;
    for (const id of ['L', 'd', 'scale', 'dataSeed', 'causal']) {
      const row = document.getElementById(id)?.closest('.row');
      if (row) row.hidden = on;
    }
  }

  // The menus, from the manifest (sent before the weights load, so they are never empty).
  setModels(models, selected) {
    this.models = models;
    const select = $('#model');
    select.disabled = false;
    if (select.options.length === models.length) return;
    select.innerHTML = models.map((m) => `<option value="${m.name}">${modelOption(m)}</option>`).join('');
    select.value = selected;
  }

  setShape(layers, heads, layer, head) {
    const fill = (el, n, v) => {
      if (el.options.length !== n) el.innerHTML = Array.from({ length: n }, (_, i) => `<option value="${i}">${i}</option>`).join('');
      el.value = String(v);
      el.disabled = false;
    };
    fill($('#layer'), layers, layer);
    fill($('#head'), heads, head);
  }

  progress({ fraction, bytes, total, model }) {
    const bar = $('#model-progress');
    bar.hidden = fraction >= 1;
    bar.value = fraction;
    const mb = (x) => (x / 1e6).toFixed(1);
    $('#model-note').textContent = fraction >= 1 ? '' : `loading the ${model} model's weights: ${mb(bytes)} of ${mb(total)} MB`;
    if (fraction < 1) $('#headline').textContent = `Loading the ${model} model: ${mb(bytes)} of ${mb(total)} MB…`;
  }

  draw(model, params, row, fresh, scale) {
    const { overview, heads, layers, chars } = model;
    this.setModels(model.models, params.model);
    this.setShape(layers, heads, params.layer, params.head);
    this.grid.style.setProperty('--heads', String(heads));
    const gridL = model.shown?.total ?? chars.length;  // the grid pictures the whole text, the heatmaps its last window
    if (this.cells.length !== overview.length) {
      this.grid.innerHTML = '';
      this.cells = overview.map((o) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.innerHTML = '<canvas width="64" height="64"></canvas><span class="cell-name"></span><span class="cell-err"></span>';
        b.addEventListener('click', () => this.onSelect(o.layer, o.head));
        this.grid.appendChild(b);
        return b;
      });
    }
    const focused = this.cells.indexOf(document.activeElement);
    overview.forEach((o, x) => {
      const b = this.cells[x], err = headError(o.errors);
      const selected = o.layer === params.layer && o.head === params.head;
      b.setAttribute('aria-pressed', String(selected));
      // one tab stop: the focused cell while the focus is in the grid, else the selected head's
      b.tabIndex = (focused >= 0 ? x === focused : selected) ? 0 : -1;
      b.style.borderColor = frameColor(err);
      b.title = `layer ${o.layer}, head ${o.head}: mean row KL(A‖Â) ${fmt(err)}, rel. Frobenius ${fmt(o.errors.relFrobenius)}; ` +
        `keys' spread σ²ₖ ${fmt(o.spread)}; click to inspect it`;
      b.dataset.error = String(err);
      b.querySelector('.cell-name').textContent = `L${o.layer} H${o.head}`;
      b.querySelector('.cell-err').textContent = `KL ${short(err)}`;
      if (fresh || b.dataset.scale !== String(scale.log)) drawSmall(b.querySelector('canvas'), o.small, gridL, scale);
      b.dataset.scale = String(scale.log);
    });
    const red = overview.filter((o) => headError(o.errors) >= 1).length;
    $('#grid-panel figcaption').innerHTML = `every head: exact <b>A</b>, framed by its error <span class="sub">(${red} of ${overview.length} with KL ≥ 1)</span>`;

    // The headline: this text's bits per character, exact and approximated (computed now), and the
    // whole held-out text's figures from the manifest (train/models/manifest.json).
    const approxName = /^positive, /.test(model.label) ? `FAVOR+ (${model.label})` : model.label;
    const passage = params.text === DEFAULT_TEXT ? 'a held-out passage' : 'your text';
    const names = { softmax: 'softmax', performer: 'the Performer (trained with FAVOR+)', finetune: 'softmax fine-tuned with FAVOR+',
      'long-softmax': 'long-context softmax', 'long-performer': 'long-context Performer' };
    $('#headline').innerHTML = `The ${params.model} model on ${passage}: <b class="num">${fmt(model.bpc.exact, 3)}</b> bits/char with exact attention → ` +
      `<b class="num approx">${fmt(model.bpc.approx, 3)}</b> with ${approxName} in every layer.` +
      `<span class="headline-sub">On the whole held-out text (chapters 122–135 and the epilogue), each with the attention it was trained with: ` +
      `${model.models.map((m) => `${names[m.name] ?? m.name} ${fmt(m.heldOutBpc, 3)}${m.context && m.context !== 256 ? ` (in windows of ${m.context.toLocaleString('en-US')})` : ''}`).join(' · ')} bits/char (train/models/manifest.json).</span>`;
    const note = trainedNote(model.models.find((m) => m.name === params.model), params.kernel, model.bpc), trained = $('#story-trained');
    trained.hidden = !note;
    trained.textContent = note ?? '';
    $('#headline').dataset.exact = String(model.bpc.exact);
    $('#headline').dataset.approx = String(model.bpc.approx);

    $('#bpc-exact').textContent = fmt(model.bpc.exact, 3);
    $('#bpc-approx').textContent = fmt(model.bpc.approx, 3);
    $('#bpc-exact').dataset.value = String(model.bpc.exact);
    $('#bpc-approx').dataset.value = String(model.bpc.approx);
    $('#top-title').textContent = row === chars.length - 1 ? `what comes next after “${quote(chars, row)}”` : `next after “${quote(chars, row)}” (row ${row})`;
    $('#top-title').dataset.row = String(row);
    const list = (top) => top.map((t) => `<code>${show(t.char)}</code> ${fmt(100 * t.p, 2)}%`).join('<br>');
    $('#top-exact').innerHTML = list(model.top.exact[row]);
    $('#top-approx').innerHTML = list(model.top.approx[row]);
  }

  // The settings changed: a continuation of the old text no longer belongs here.
  invalidate(key) {
    if (this.genKey === null || this.genKey === key) return;
    this.genKey = null;
    for (const id of ['#gen-exact', '#gen-approx']) $(id).replaceChildren();
    for (const id of ['#gen-exact-speed', '#gen-approx-speed']) $(id).textContent = '';
    $('#gen-note').textContent = 'the text or the settings changed: generate again';
  }

  generated(msg, key) {
    if (msg.key !== key) return;  // asked for an earlier text
    $('#gen-note').textContent = '';
    if (msg.error) {
      $('#gen-exact').textContent = `generation failed: ${msg.error}`;
      $('#gen-approx').textContent = '—';
      return;
    }
    this.genKey = key;
    // the prompt's last characters (muted), then the continuation
    const put = (el, text) => {
      const tail = document.createElement('span'), cont = document.createElement('span');
      tail.className = 'gen-prompt';
      const prompt = msg.prompt ?? '';
      tail.textContent = `${msg.promptLength > prompt.length ? '…' : ''}${prompt}`;
      cont.className = 'gen-text';
      cont.textContent = text;
      el.replaceChildren(tail, cont);
    };
    put($('#gen-exact'), msg.exact.text);
    put($('#gen-approx'), msg.approx.text);
    $('#gen-exact-speed').textContent = `${fmtRate(msg.exact.charsPerSecond)} characters/s`;
    $('#gen-approx-speed').textContent = `${msg.label}: ${fmtRate(msg.approx.charsPerSecond)} characters/s`;
  }
}

// A small picture of an L×L matrix, sampled in the worker at the canvas's size (model-view.js,
// thumbnail), on the main heatmaps' scale; the masked part is recomputed from L.
function drawSmall(canvas, small, L, scale) {
  const n = canvas.width, ctx = canvas.getContext('2d'), img = ctx.createImageData(n, n);
  const px = new Uint32Array(img.data.buffer);
  for (let y = 0; y < n; y++) {
    const i = Math.min(L - 1, Math.floor((y * L) / n));
    for (let x = 0; x < n; x++) {
      const j = Math.min(L - 1, Math.floor((x * L) / n));
      px[y * n + x] = j > i ? MASKED_COLOR : scale.lut[scale.index(small[y * n + x])];
    }
  }
  ctx.putImageData(img, 0, 0);
}
