// The row inspector: the inspected query's weights over its keys, exact against approximated,
// with a cursor at the hovered key that moves without redrawing the plot.
import { fmt } from './colors.js';
import { drawPlot } from './plot.js';
import { rowKL } from './row-kl.js';

export class RowInspector {
  // svg, sub (the heading's subtitle) and legend are elements; onHover([i, j]) gets the entry
  // under the pointer, or null when it leaves.
  constructor({ svg, sub, legend, onHover }) {
    Object.assign(this, { svg, sub, legend });
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
  // over the whole text where the view is a window of it; the cursor at key `j` (or null).
  draw({ view, i, log, rows, j }) {
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
    if (rows) kl = rows.kl[i];
    this.sub.textContent = `query i = ${i}: KL(A_i ‖ Â_i) = ${fmt(kl)}${rows ? ` over all ${total.toLocaleString('en-US')} keys; plotted: the last ${L}` : ''}` +
      `${nonPositive ? `, ${nonPositive} weights ≤ 0${log ? ' (off the log axis)' : ''}` : ''}`;
    const geom = drawPlot(this.svg, {
      x: { log: false, domain: [-0.5, Math.max(S, 2) - 0.5], label: causal ? `key j (causal: j ≤ ${i})` : 'key j', format: (v) => String(Math.round(v)) },
      y: { log, label: 'weight' },
      series: [
        { label: `exact A[${i}, :]`, color: '#1d2330', points: exact, width: 1.6 },
        { label: `approximate Â[${i}, :]`, color: '#e0711a', points: approx, width: 1.4 },
      ],
      cursorX: j ?? null,
      legendRoot: this.legend,
      margin: { b: 30 },
    });
    this.cursor = this.svg.querySelector('.cursor');
    this.geom = { ...geom, S, i };
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
