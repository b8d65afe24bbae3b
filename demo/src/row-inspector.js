// The row inspector: the inspected query's weights over its keys, exact against approximated,
// with a cursor at the hovered key that moves without redrawing the plot.
import { fmt } from './colors.js';
import { drawPlot } from './plot.js';
import { rowAmongDraws } from './draws.js';
import { rowKL } from './row-kl.js';

// The draws' mean of row i, dashed, over the band of their range.
function drawsSeries({ lo, hi, mean, draws }, L, i, S) {
  const points = [], band = [];
  for (let k = 0; k < S; k++) {
    const x = i * L + k;
    points.push([k, mean[x], `j = ${k}: mean of ${draws} draws ${fmt(mean[x])}, range ${fmt(lo[x])} … ${fmt(hi[x])}`]);
    band.push([k, lo[x], hi[x]]);
  }
  return { label: `Â[${i}, :] over ${draws} draws: mean, and their range`, color: '#b0561a', points, band, width: 1, dash: '3 2' };
}

// What the draws say about the row: how often A lies inside their range, and how far their mean is.
function spreadNote(spread, A, L, i, S, kl) {
  if (!spread) return '';
  if (spread.single) return 'the exported W is one draw: untick "use the Performer\'s exported W" to see others';
  const among = rowAmongDraws(A, spread, L, i, S);
  return `A inside the ${spread.draws} draws' range for ${among.inside} of ${S} keys; ` +
    `KL(A_i ‖ their mean) = ${fmt(among.kl)}, one draw's ${fmt(kl)}`;
}

export class RowInspector {
  // svg, sub (the heading's subtitle) and legend are elements; onHover([i, j]) gets the entry
  // under the pointer, or null when it leaves.
  constructor({ svg, sub, legend, spreadNote, onHover }) {
    Object.assign(this, { svg, sub, legend, spreadNote });
    this.geom = null;
    this.cursor = null;
    svg.addEventListener('pointermove', (e) => {
      const g = this.geom;
      if (!g) return;
      const r = svg.getBoundingClientRect();
      const px = ((e.clientX - r.left) / r.width) * g.width;
      const t = (px - g.margin.l) / (g.width - g.margin.l - g.margin.r);
      const j = Math.round(g.x.lo + t * (g.x.hi - g.x.lo));
      if (j >= 0 && j < g.S) onHover([g.i, j]);
    });
    svg.addEventListener('pointerleave', () => onHover(null));
  }

  // Row i of view ({ L, causal, A, Ahat, total }); `rows` are a trained model's per-row measures
  // over the whole text where the view is a window of it; the cursor at key `j` (or null);
  // `spread`, when asked for, Â's range and mean over draws of the approximation (draws.js), or
  // { single: true } where there is one draw.
  draw({ view, i, log, rows, j, spread = null }) {
    const { L, A, Ahat, causal, total } = view;
    const S = causal ? i + 1 : L;
    const exact = [], approx = [];
    let { kl, nonPositive } = rowKL(A, Ahat, i * L, S);
    for (let k = 0; k < S; k++) {
      const a = A[i * L + k], b = Ahat[i * L + k];
      exact.push([k, a, `j = ${k}: A = ${fmt(a)}`]);
      approx.push([k, b, `j = ${k}: Â = ${fmt(b)}`]);
    }
    // In a window of a longer text the KL is of the whole row (computed in the worker); the plot has the window's keys.
    const shownKL = kl;  // of the drawn keys: what the draws are compared on
    if (rows) kl = rows.kl[i];
    this.sub.textContent = `query i = ${i}: KL(A_i ‖ Â_i) = ${fmt(kl)}${rows ? ` over all ${total.toLocaleString('en-US')} keys; plotted: the last ${L}` : ''}` +
      `${nonPositive ? `, ${nonPositive} weights ≤ 0${log ? ' (off the log axis)' : ''}` : ''}`;
    const geom = drawPlot(this.svg, {
      x: { log: false, domain: [-0.5, Math.max(S, 2) - 0.5], label: causal ? `key j (causal: j ≤ ${i})` : 'key j', format: (v) => String(Math.round(v)) },
      y: { log, label: 'weight' },
      series: [
        ...(spread?.lo ? [drawsSeries(spread, L, i, S)] : []),
        { label: `exact A[${i}, :]`, color: '#1d2330', points: exact, width: 1.6 },
        { label: `approximate Â[${i}, :]`, color: '#e0711a', points: approx, width: 1.4 },
      ],
      cursorX: j ?? null,
      legendRoot: this.legend,
      margin: { b: 30 },
    });
    this.cursor = this.svg.querySelector('.cursor');
    this.geom = { ...geom, S, i };
    this.spreadNote.textContent = spreadNote(spread, view.A, L, i, S, shownKL) + (spread?.lo && rows ? ` (over the plotted keys)` : '');
  }

  // The cursor at key j, or none (null, or a key the row does not have).
  setCursor(j) {
    const g = this.geom;
    if (!g) return;
    this.cursor?.remove();
    this.cursor = null;
    if (j === null || j >= g.S) return;
    const x = g.margin.l + ((j - g.x.lo) / (g.x.hi - g.x.lo)) * (g.width - g.margin.l - g.margin.r);
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'line');
    for (const [k, v] of Object.entries({ x1: x, x2: x, y1: g.margin.t, y2: g.height - g.margin.b, class: 'cursor' })) line.setAttribute(k, v);
    this.svg.appendChild(line);
    this.cursor = line;
  }
}
