// The row inspector: the inspected query's weights over its keys, exact against approximated,
// with a cursor at the hovered key that moves without redrawing the plot.
import { fmt } from './colors.js';
import { drawPlot } from './plot.js';
import { rowAmongDraws } from './draws.js';
import { rowKL } from './row-kl.js';
import { pointerX } from './pointer.js';

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
    `KL(Aᵢ ‖ their mean) = ${fmt(among.kl)}, one draw's ${fmt(kl)}`;
}

const off = (x) => !(Number.isFinite(x) && x > 0);
// How many weights of entries [start, start + count) a log axis cannot draw (≤ 0 or not finite),
// of A and of Â: A's too, as exp underflows to 0 in float32 for keys far below the row's largest
// (a Performer's last row: 128 of its 256 keys).
export function offLogAxis(A, Ahat, start, count) {
  let exact = 0, approx = 0;
  for (let j = start; j < start + count; j++) {
    if (off(A[j])) exact++;
    if (off(Ahat[j])) approx++;
  }
  return { exact, approx };
}

const weights = (n) => `${n} weight${n === 1 ? '' : 's'}`;
// The heading's subtitle for row i: its KL (`rows`: of the whole row, `total` keys, of which the
// last L are plotted) and the weights the plot leaves out (offLogAxis's counts): on a log axis
// A's and Â's; on a linear one A's zeros are drawn, Â's weights ≤ 0 are drawn below 0 and
// said (not probabilities).
export function inspectorSub({ i, kl, rows, total, L, counts, log }) {
  const { exact, approx } = counts;
  let left = '';
  if (log && (exact || approx)) {
    left = `, ${[exact && `${weights(exact)} of A`, approx && `${exact ? approx : weights(approx)} of Â`].filter(Boolean).join(' and ')} ≤ 0 (off the log axis)`;
  } else if (!log && approx) left = `, ${weights(approx)} of Â ≤ 0`;
  return `query i = ${i}: KL(Aᵢ ‖ Âᵢ) = ${fmt(kl)}${rows ? ` over all ${total.toLocaleString('en-US')} keys; plotted: the last ${L}` : ''}${left}`;
}

// The key axis of a row of S keys (j ≤ i where causal): one tick per key or per round step, never between two.
export function keyAxis(S, i, causal) {
  return { log: false, integer: true, domain: [-0.5, S - 0.5], label: causal ? `key j (causal: j ≤ ${i})` : 'key j', format: (v) => String(Math.round(v)) };
}

// The weight axis's range where the drawn weights have none of their own (all equal, as a
// causal row 0's one key, A = Â = 1): from 0 (linear) or a tenth of it (log) to a little over
// the weight; null where the data span a range (the plot pads it).
export function flatRowDomain(values, log) {
  const shown = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (!shown.length || shown.some((v) => v !== shown[0])) return null;
  const v = shown[0];
  if (log) return [v / 10, v * 1.25];
  return v > 0 ? [0, v * 1.1] : v < 0 ? [v * 1.1, 0] : null;
}

// Rows of up to this many keys get a marker at each weight: one key has no line to draw.
const MARKED_KEYS = 16;

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
      const px = ((pointerX(e) - r.left) / r.width) * g.width;
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
    let { kl } = rowKL(A, Ahat, i * L, S);
    for (let k = 0; k < S; k++) {
      const a = A[i * L + k], b = Ahat[i * L + k];
      exact.push([k, a, `j = ${k}: A = ${fmt(a)}`]);
      approx.push([k, b, `j = ${k}: Â = ${fmt(b)}`]);
    }
    // In a window of a longer text the KL is of the whole row (computed in the worker); the plot has the window's keys.
    const shownKL = kl;  // of the drawn keys: what the draws are compared on
    if (rows) kl = rows.kl[i];
    this.sub.textContent = inspectorSub({ i, kl, rows, total, L, counts: offLogAxis(A, Ahat, i * L, S), log });
    const draws = spread?.lo ? [drawsSeries(spread, L, i, S)] : [];
    const few = S <= MARKED_KEYS;
    const domain = flatRowDomain([...exact, ...approx].map((p) => p[1]).concat(draws.flatMap((s) => s.band.flatMap((b) => [b[1], b[2]]))), log);
    this.cursorKey = j ?? null;
    const geom = drawPlot(this.svg, {
      x: keyAxis(S, i, causal),
      y: { log, label: 'weight', ...(domain ? { domain } : few && { pad: 0.1 }) },  // room for the rings at either end
      series: [
        ...draws,
        // Â's ring around A's dot: both seen where they are equal
        { label: `exact A[${i}, :]`, color: '#1d2330', points: exact, width: 1.6, ...(few && { marker: 'circle' }) },
        { label: `approximate Â[${i}, :]`, color: '#e0711a', points: approx, width: 1.4, ...(few && { marker: 'ring' }) },
      ],
      cursorX: j ?? null,
      legendRoot: this.legend,
      margin: { b: 30 },
      // drawn again at a new size (a mode switch resizes the panel): the pointer's and cursor's geometry with it
      onRedraw: (g) => {
        this.geom = { ...g, S, i };
        this.cursor = this.svg.querySelector('.cursor');
        this.setCursor(this.cursorKey);
      },
    });
    this.cursor = this.svg.querySelector('.cursor');
    this.geom = { ...geom, S, i };
    this.spreadNote.textContent = spreadNote(spread, view.A, L, i, S, shownKL) + (spread?.lo && rows ? ` (over the plotted keys)` : '');
  }

  // The cursor at key j, or none (null, or a key the row does not have).
  setCursor(j) {
    const g = this.geom;
    if (!g) return;
    this.cursorKey = j;
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
