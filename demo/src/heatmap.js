// A canvas heatmap of an L×S matrix with a crosshair, a marker for the inspected row, mouse and
// keyboard cursors (arrow keys move, Enter inspects the row), and a color legend.
import { MASKED_COLOR, INVALID_COLOR, lutToCss } from './colors.js';
import { legendTicks } from './legend-ticks.js';
import { pointerX, pointerY } from './pointer.js';
import { escapeHtml } from './text.js';

export class Heatmap {
  constructor(root, { onHover, onSelect, name }) {
    this.root = root;
    this.name = name;
    this.canvas = root.querySelector('canvas');
    this.ctx = this.canvas.getContext('2d', { alpha: false });
    this.h = root.querySelector('.xh-h');
    this.v = root.querySelector('.xh-v');
    this.rowMark = root.querySelector('.row-mark');
    this.rows = 0;
    this.cols = 0;
    this.cursor = null;
    // The cell drawn under the pointer; the event landed on the canvas, so the edges clamp into it.
    const cell = (event) => {
      const r = this.canvas.getBoundingClientRect();
      const at = (c, start, size, n) => Math.max(0, Math.min(n - 1, Math.floor(((c - start) / size) * n)));
      return this.rows && this.cols ? [at(pointerY(event), r.top, r.height, this.rows), at(pointerX(event), r.left, r.width, this.cols)] : null;
    };
    this.canvas.addEventListener('pointermove', (e) => { const c = cell(e); onHover(c ? c[0] : null, c ? c[1] : null); });
    this.canvas.addEventListener('pointerleave', () => onHover(null, null));
    // a tap sends no pointermove: the click shows its cell too, and the focus it gives the map
    // (right after its pointerdown) does not put the cursor at (0, 0)
    let pointing = false;
    this.canvas.addEventListener('pointerdown', () => { pointing = true; });
    this.canvas.addEventListener('click', (e) => { const c = cell(e); if (c) { onHover(c[0], c[1]); onSelect(c[0], c[1]); } });
    root.addEventListener('keydown', (e) => {
      if (!this.rows) return;
      const [i, j] = this.cursor ?? [0, 0];
      const big = Math.max(1, Math.round(this.rows / 16));
      const step = e.shiftKey ? big : 1;
      const moves = { ArrowUp: [-step, 0], ArrowDown: [step, 0], ArrowLeft: [0, -step], ArrowRight: [0, step],
        PageUp: [-big, 0], PageDown: [big, 0], Home: [0, -this.cols], End: [0, this.cols] };
      if (moves[e.key]) {
        const [di, dj] = moves[e.key];
        onHover(Math.max(0, Math.min(this.rows - 1, i + di)), Math.max(0, Math.min(this.cols - 1, j + dj)));
        e.preventDefault();
      } else if (e.key === 'Enter' || e.key === ' ') {
        onSelect(i, j);
        e.preventDefault();
      } else if (e.key === 'Escape') {
        onHover(null, null);
      }
    });
    root.addEventListener('focus', () => {
      if (!this.cursor && this.rows && !pointing) onHover(0, 0);
      pointing = false;
    });
    root.addEventListener('blur', () => onHover(null, null));
  }

  // values: Float32Array rows×cols; scale: from colors.js; masked(i, j) for causal.
  draw(values, rows, cols, scale, causal) {
    this.rows = rows;
    this.cols = cols;
    if (this.canvas.width !== cols || this.canvas.height !== rows) {
      this.canvas.width = cols;
      this.canvas.height = rows;
      this.image = null;
    }
    this.canvas.classList.toggle('pixelated', cols <= 512);
    this.image ??= this.ctx.createImageData(cols, rows);
    const px = new Uint32Array(this.image.data.buffer);
    // One monomorphic loop per scale kind (this runs for 3 × L² pixels on every change).
    const { lut, mode, k, offset } = scale;
    const inv = scale.inv ?? 0;
    const top = lut.length - 1;
    for (let i = 0; i < rows; i++) {
      const o = i * cols;
      const end = causal ? Math.min(cols, i + 1) : cols;
      for (let j = 0; j < end; j++) {
        const x = values[o + j];
        if (x !== x) { px[o + j] = INVALID_COLOR; continue; }  // NaN, on every scale; ±Infinity clamp to the ends
        let t;
        if (mode === 'linear') t = x > 0 ? x * k : 0;
        else if (mode === 'log') t = x > 0 ? (Math.log(x) - offset) * k : 0;
        else if (mode === 'diverging') t = offset + x * k;
        else t = offset + (x >= 0 ? 1 : -1) * Math.log1p(Math.abs(x) * inv) * k;
        const idx = t <= 0 ? 0 : t >= top ? top : (t + 0.5) | 0;
        px[o + j] = lut[idx];
      }
      for (let j = end; j < cols; j++) px[o + j] = MASKED_COLOR;
    }
    this.ctx.putImageData(this.image, 0, 0);
  }

  setCursor(i, j) {
    this.cursor = i === null ? null : [i, j];
    const show = i !== null && this.rows > 0;
    this.h.hidden = this.v.hidden = !show;
    if (show) {
      this.h.style.top = `${((i + 0.5) / this.rows) * 100}%`;
      this.v.style.left = `${((j + 0.5) / this.cols) * 100}%`;
    }
  }

  // Characters on the axes, beside the canvas: rows [[i, text, class]] on the left, columns on
  // the bottom; null clears them.
  labels(spec) {
    const frame = this.root.parentElement;
    const y = frame.querySelector('.ax-y'), x = frame.querySelector('.ax-x');
    if (!y || !x) return;
    frame.classList.toggle('labelled', Boolean(spec));
    const put = (el, items, vertical) => {
      el.innerHTML = (items ?? []).map(([k, text, cls]) => {
        const at = (((k + 0.5) / (vertical ? this.rows : this.cols)) * 100).toFixed(3);
        const safe = escapeHtml(text);
        return `<span class="${cls}" style="${vertical ? 'top' : 'left'}:${at}%">${safe}</span>`;
      }).join('');
    };
    put(y, spec?.rows, true);
    put(x, spec?.cols, false);
  }

  setRow(i) {
    this.rowMark.hidden = i === null || !this.rows;
    if (!this.rowMark.hidden) {
      this.rowMark.style.top = `${(i / this.rows) * 100}%`;
      this.rowMark.style.height = `max(2px, ${100 / this.rows}%)`;
    }
  }
}

// A horizontal colorbar with ticks, drawn into `root` (a .legend element).
export function drawLegend(root, scale, title) {
  let bar = root.querySelector('canvas');
  if (!bar) {
    root.innerHTML = '<div class="legend-title"></div><canvas width="256" height="1" aria-hidden="true"></canvas><div class="ticks"></div>';
    bar = root.querySelector('canvas');
  }
  root.querySelector('.legend-title').textContent = title;
  root.querySelector('.legend-title').title = title;
  const ctx = bar.getContext('2d');
  const img = ctx.createImageData(256, 1);
  new Uint32Array(img.data.buffer).set(scale.lut);
  ctx.putImageData(img, 0, 0);
  const { ends, groups } = legendTicks(scale);
  // Drop the groups whose labels would overlap one kept already, at the legend's width (read now:
  // a resize draws it again). A label is taken as 6.5 px a character at the ticks' 10 px, a little
  // more than they measure; the ends' labels are drawn inwards from the ends (style.css).
  const width = root.clientWidth || 256;
  const extent = ([p, label]) => {
    const x = p * width, w = label.length * 6.5;
    return p <= 0 ? [x, x + w] : p >= 1 ? [x - w, x] : [x - w / 2, x + w / 2];
  };
  const apart = (a, b) => a[1] + 6 <= b[0] || b[1] + 6 <= a[0];
  const kept = [...ends];
  for (const group of groups) {
    const boxes = group.map(extent);
    if (boxes.every((a, n) => kept.every((k) => apart(a, extent(k))) && boxes.slice(0, n).every((b) => apart(a, b)))) kept.push(...group);
  }
  kept.sort((a, b) => a[0] - b[0]);
  root.querySelector('.ticks').innerHTML = kept
    .map(([p, label]) => `<span style="left:${(p * 100).toFixed(2)}%">${label}</span>`).join('');
  root.dataset.vmax = String(scale.vmax);
  bar.title = `${title}: ${lutToCss(scale.lut, 0)} … ${lutToCss(scale.lut, 255)}`;
}
