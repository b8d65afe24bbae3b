// Model mode on the main thread: its controls (text, model, layer, head, trained W), the grid of
// every head (exact A, framed by the approximation's error), the effect on the model (bits per
// character, next-character predictions) and generation side by side.
import { MASKED_COLOR, sequentialScale, fmt } from './colors.js';

// A held-out passage: the first 256 characters of chapter 123 (the models never saw chapters
// 122-135 and the epilogue), the models' whole context.
export const DEFAULT_TEXT = "During the most violent shocks of the Typhoon, the man at the Pequod's jaw-bone tiller had several times been reelingly hurled to the deck by its spasmodic motions, even though preventer tackles had been attached to it\u2014for they were slack\u2014because some play";

const $ = (sel) => document.querySelector(sel);

// Error of a head under the approximation, and the color of its frame: green (small) to red.
const headError = (e) => e.meanRowKL;
function frameColor(err) {
  const t = Math.max(0, Math.min(1, Math.log10(Math.max(err, 1e-4) / 1e-3) / 3));  // 1e-3 .. 1
  const hue = 120 * (1 - t);
  return `hsl(${hue}, 70%, 42%)`;
}

export class ModelPanel {
  constructor({ onSelect, onGenerate }) {
    this.onSelect = onSelect;
    this.grid = $('#heads-grid');
    this.cells = [];
    $('#gen-run').addEventListener('click', () => onGenerate(Math.max(1, Math.min(255, Number($('#gen-n').value) || 60))));
  }

  show(on) {
    $('#model-settings').hidden = !on;
    $('#model-view').hidden = !on;
    for (const id of ['L', 'd', 'scale', 'dataSeed', 'causal']) {
      const row = document.getElementById(id)?.closest('.row');
      if (row) row.hidden = on;
    }
  }

  setModels(models, selected) {
    const select = $('#model');
    if (select.options.length === models.length) return;
    select.innerHTML = models.map((m) => `<option value="${m.name}">${m.name}: ${m.title} (held-out ${fmt(m.heldOutBpc, 3)} bits/char)</option>`).join('');
    select.value = selected;
  }

  setShape(layers, heads, layer, head) {
    const fill = (el, n, v) => {
      if (el.options.length !== n) el.innerHTML = Array.from({ length: n }, (_, i) => `<option value="${i}">${i}</option>`).join('');
      el.value = String(v);
    };
    fill($('#layer'), layers, layer);
    fill($('#head'), heads, head);
  }

  progress(fraction, bytes) {
    const bar = $('#model-progress');
    bar.hidden = fraction >= 1;
    bar.value = fraction;
    $('#model-note').textContent = fraction >= 1 ? '' : `loading the weights: ${fmt(bytes / 1048576, 2)} MiB`;
  }

  draw(model, params) {
    const { overview, heads, layers, chars } = model;
    this.setModels(model.models, params.model);
    this.setShape(layers, heads, params.layer, params.head);
    const trained = model.models.find((m) => m.name === params.model)?.attention === 'favor';
    $('#trainedW').disabled = !trained;
    $('#trainedW').closest('.row').classList.toggle('disabled', !trained);
    this.grid.style.setProperty('--heads', String(heads));
    const L = chars.length;
    if (this.cells.length !== overview.length) {
      this.grid.innerHTML = '';
      this.cells = overview.map((o) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.innerHTML = `<canvas width="64" height="64"></canvas><span></span>`;
        b.addEventListener('click', () => this.onSelect(o.layer, o.head));
        this.grid.appendChild(b);
        return b;
      });
    }
    overview.forEach((o, x) => {
      const b = this.cells[x], err = headError(o.errors);
      b.setAttribute('aria-pressed', String(o.layer === params.layer && o.head === params.head));
      b.style.borderColor = frameColor(err);
      b.title = `layer ${o.layer}, head ${o.head}: mean row KL(A‖Â) ${fmt(err)}, rel. Frobenius ${fmt(o.errors.relFrobenius)}`;
      b.dataset.error = String(err);
      b.querySelector('span').textContent = `L${o.layer} H${o.head} · KL ${fmt(err, 2)}`;
      drawSmall(b.querySelector('canvas'), o.A, L);
    });
    $('#heads-sub').textContent = `exact A of each layer × head (${L} characters; log scale, 4 decades), framed by its mean row KL(A‖Â) under ${model.label}: ` +
      'green ≤ 10⁻³, yellow ≈ 0.03, red ≥ 1 (log scale); click one to inspect it';
    $('#bpc-exact').textContent = fmt(model.bpc.exact, 3);
    $('#bpc-approx').textContent = fmt(model.bpc.approx, 3);
    $('#bpc-exact').dataset.value = String(model.bpc.exact);
    $('#bpc-approx').dataset.value = String(model.bpc.approx);
    const row = model.top.row, show = (c) => (c === ' ' ? '␣' : c === '\n' ? '⏎' : c.replace(/&/g, '&amp;').replace(/</g, '&lt;'));
    $('#top-title').textContent = `after “…${chars.slice(Math.max(0, row - 11), row + 1).replace(/\n/g, '⏎')}” (row ${row})`;
    const list = (top) => top.map((t) => `<code>${show(t.char)}</code> ${fmt(100 * t.p, 2)}%`).join('<br>');
    $('#top-exact').innerHTML = list(model.top.exact);
    $('#top-approx').innerHTML = list(model.top.approx);
  }

  generated(msg) {
    if (msg.error) {
      $('#gen-exact').textContent = `generation failed: ${msg.error}`;
      return;
    }
    // the prompt's last characters (muted), then the continuation
    const show = (el, text) => {
      const tail = document.createElement('span'), cont = document.createElement('span');
      tail.className = 'gen-prompt';
      tail.textContent = `…${msg.prompt ?? ''}`;
      cont.className = 'gen-text';
      cont.textContent = text;
      el.replaceChildren(tail, cont);
    };
    show($('#gen-exact'), msg.exact.text);
    show($('#gen-approx'), msg.approx.text);
    $('#gen-exact-speed').textContent = `${fmt(msg.exact.charsPerSecond, 3)} characters/s`;
    $('#gen-approx-speed').textContent = `${msg.label}: ${fmt(msg.approx.charsPerSecond, 3)} characters/s`;
  }
}

// A small picture of an L×L matrix (nearest-neighbour downsampling to the canvas).
function drawSmall(canvas, A, L) {
  const n = canvas.width, ctx = canvas.getContext('2d'), img = ctx.createImageData(n, n);
  const px = new Uint32Array(img.data.buffer);
  let vmax = 0;
  for (const a of A) if (a > vmax) vmax = a;
  // log scale over four decades: at this size a linear scale shows only the largest weights
  const scale = sequentialScale({ vmax: vmax || 1, log: true, floor: (vmax || 1) * 1e-4 });
  for (let y = 0; y < n; y++) {
    const i = Math.min(L - 1, Math.floor((y * L) / n));
    for (let x = 0; x < n; x++) {
      const j = Math.min(L - 1, Math.floor((x * L) / n));
      px[y * n + x] = j > i ? MASKED_COLOR : scale.lut[scale.index(A[i * L + j])];
    }
  }
  ctx.putImageData(img, 0, 0);
}
