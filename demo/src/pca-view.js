// The small 2-D view of the codebook modes: keys as dots colored by their nearest codeword,
// codewords as larger outlined diamonds, on the keys' top two principal components, with one
// scale on both axes (distances are not distorted). The hovered key is ringed and joined to its
// codeword. Drawn as SVG (up to L = 1024 dots and a few thousand codewords).
import { fmt } from './colors.js';

const TABLEAU10 = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#8cd17d'];

// Codeword y of c: a categorical palette for c ≤ 10, else hues spaced by the golden angle (so
// codewords with nearby indices still differ), in three lightness steps.
export function codewordColor(y, c) {
  if (c <= TABLEAU10.length) return TABLEAU10[y];
  const hue = (y * 137.508) % 360;
  return `hsl(${hue.toFixed(1)}, 68%, ${[44, 56, 36][y % 3]}%)`;
}

const M = { l: 17, r: 4, t: 4, b: 17 };
// The square's side in the viewBox: the element's width in px, so that its labels and dots keep
// their size in px whatever the panel's width; drawn again when that changes.
const sideOf = (width) => Math.max(160, Math.round(width || 240));

export class PcaView {
  constructor(svg, note) {
    this.svg = svg;
    this.note = note;
    this.view = null;
    this.map = null;
    this.width = 0;
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(([entry]) => {
        const width = entry.contentRect.width;
        const redraw = width > 0 && this.drawn && sideOf(width) !== this.drawn.side;
        this.width = width;
        if (redraw) this.draw(this.view, this.drawn.args);
      }).observe(svg);
    }
  }

  // view: { keys: Float32Array 2L, codewords: Float32Array 2c, assign, counts, used, explained }
  draw(view, args) {
    const { L, clusters, assignment } = args;
    const SIZE = sideOf(this.width || this.svg.clientWidth);
    this.drawn = { side: SIZE, args };
    this.svg.setAttribute('viewBox', `0 0 ${SIZE} ${SIZE}`);
    this.view = view;
    const { keys, codewords, assign, counts, explained } = view;
    const c = clusters;
    // The bounding box of keys and codewords, centred, one scale on both axes.
    const lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
    for (const a of [keys, codewords]) {
      for (let x = 0; x < a.length; x++) {
        const v = a[x], axis = x & 1;
        if (v < lo[axis]) lo[axis] = v;
        if (v > hi[axis]) hi[axis] = v;
      }
    }
    const span = Math.max(hi[0] - lo[0], hi[1] - lo[1]) * 1.08 || 1;
    const mid = [(lo[0] + hi[0]) / 2 || 0, (lo[1] + hi[1]) / 2 || 0];
    const w = SIZE - M.l - M.r, h = SIZE - M.t - M.b;
    const side = Math.min(w, h);
    const cx = M.l + w / 2, cy = M.t + h / 2;
    const k = side / span;
    const px = (x) => cx + (x - mid[0]) * k, py = (y) => cy - (y - mid[1]) * k;
    const zx = px(0), zy = py(0);  // the keys' mean
    this.map = { px, py };
    const colors = Array.from({ length: c }, (_, y) => codewordColor(y, c));
    const dot = L <= 64 ? 3 : L <= 256 ? 2.2 : 1.6;
    const dia = c <= 16 ? 5.5 : c <= 64 ? 4.2 : c <= 256 ? 3.2 : 2.6;
    let out = `<rect class="frame" x="${M.l}" y="${M.t}" width="${w}" height="${h}"/>` +
      `<line class="zero" x1="${M.l}" x2="${M.l + w}" y1="${zy.toFixed(1)}" y2="${zy.toFixed(1)}"/>` +
      `<line class="zero" x1="${zx.toFixed(1)}" x2="${zx.toFixed(1)}" y1="${M.t}" y2="${M.t + h}"/>` +
      `<text class="axis-label" x="${cx}" y="${SIZE - 5}" text-anchor="middle">PC1 (${fmt(100 * explained[0], 2)} % of variance)</text>` +
      `<text class="axis-label" x="12" y="${cy}" text-anchor="middle" transform="rotate(-90 12 ${cy})">PC2 (${fmt(100 * explained[1], 2)} %)</text>` +
      `<g class="keys">`;
    for (let i = 0; i < L; i++) {
      out += `<circle class="key" cx="${px(keys[2 * i]).toFixed(1)}" cy="${py(keys[2 * i + 1]).toFixed(1)}" r="${dot}" fill="${colors[assign[i]]}"/>`;
    }
    // Codewords on top: filled diamonds with a dark outline while they are few, hollow diamonds in
    // their color when many (the keys stay visible through them); ◇ grey: nearest to no key.
    const hollow = c > 32;
    out += `</g><g class="codewords${hollow ? ' hollow' : ''}">`;
    for (let y = 0; y < c; y++) {
      const x0 = px(codewords[2 * y]), y0 = py(codewords[2 * y + 1]);
      const paint = counts[y] ? (hollow ? `style="stroke:${colors[y]}"` : `fill="${colors[y]}"`) : '';
      out += `<path class="codeword${counts[y] ? '' : ' unused'}" d="M${x0.toFixed(1)},${(y0 - dia).toFixed(1)}l${dia},${dia}l${-dia},${dia}l${-dia},${-dia}z" ${paint}/>`;
    }
    out += '</g><g class="hi"></g>';
    this.svg.innerHTML = out;
    this.hi = this.svg.querySelector('g.hi');
    this.svg.dataset.keys = String(L);
    this.svg.dataset.codewords = String(c);
    const mode = { hard: 'hard VQ', soft: 'soft VQ', gaussian: 'Performer as soft VQ' }[assignment];
    this.svg.setAttribute('aria-label', `${mode}: ${L} keys and ${c} codewords on the keys' top two principal components; ` +
      `${view.used} codewords are the nearest codeword of some key`);
    const colorBy = assignment === 'hard' ? 'its codeword' : 'its nearest codeword';
    let text = `Keys (× input scale s, as the library gets them) on their top-2 PCs; ● key, colored by ${colorBy}; ` +
      (hollow ? `◇ codeword in its color (grey: nearest to no key): ${view.used} of ${c} used.`
        : `◆ codeword (◇ nearest to no key): ${view.used} of ${c} used.`);
    if (assignment === 'gaussian') text += ' Codewords W·∜d: not fitted to the keys.';
    let title = 'The keys K as the library gets them (after the input scale s; the kernel sees k̃ = K/∜d, the same picture ' +
      'rescaled), projected on their top two principal components (power iteration on the d×d covariance), one scale on both ' +
      'axes; the codewords live in key space and are projected the same way. The dot color is the nearest codeword: the hard ' +
      'assignment, and the largest responsibility for soft and Gaussian assignments.';
    if (assignment === 'gaussian') {
      title += ' Here c_y = ω_y/√scale = ω_y·∜d with ‖ω_y‖ = √d (orthogonal-fixed): random directions of norm d/∜d, ' +
        'not fitted to the keys; every key still weighs on every codeword.';
    }
    this.note.title = title;
    this.note.textContent = text;
  }

  // Rings key j and joins it to its nearest codeword (null: nothing).
  highlight(j) {
    if (!this.hi || !this.view) return;
    if (j === null || j === undefined || j >= this.view.assign.length) { this.hi.innerHTML = ''; return; }
    const { keys, codewords, assign } = this.view;
    const { px, py } = this.map;
    const x = px(keys[2 * j]), y = py(keys[2 * j + 1]);
    const yc = assign[j];
    const xc = px(codewords[2 * yc]), ycy = py(codewords[2 * yc + 1]);
    this.hi.innerHTML = `<line class="link" x1="${x.toFixed(1)}" y1="${y.toFixed(1)}" x2="${xc.toFixed(1)}" y2="${ycy.toFixed(1)}"/>` +
      `<circle class="halo" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="6"/><circle class="ring" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="6"/>`;
  }
}
