// The inspected query in the manner of bertviz: the text drawn once, in lines of monospace
// characters, and from the query character an arc to every key it weighs, wider for more weight:
// exact attention above the text line, the approximation below it, in two colors. Keys under
// 1 % in both are left out (the subtitle says how much weight that leaves undrawn).
import { fmt } from './colors.js';
import { shownChar } from './text.js';

const NS = 'http://www.w3.org/2000/svg';
const el = (name, attrs, parent) => {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  parent?.appendChild(e);
  return e;
};
const FONT = '12px ui-monospace, "DejaVu Sans Mono", monospace';
const MIN_WEIGHT = 0.01;
let advance = 0;
function charWidth() {
  if (!advance) {
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = FONT;
    advance = ctx.measureText('MMMMMMMMMM').width / 10 || 7.2;
  }
  return advance;
}

// Where each line of the drawn text starts: at most perLine characters a line, broken after a
// newline or after the last space that fits, so that words stay whole (a word longer than a line
// is cut).
export function lineStarts(chars, L, perLine) {
  const starts = [0];
  for (let s = 0; L - s > perLine || chars.slice(s, L - 1).includes('\n');) {
    let cut = Math.min(L, s + perLine);
    const newline = chars.indexOf('\n', s);
    if (newline >= 0 && newline < cut) cut = newline + 1;
    else if (cut < L) for (let j = cut - 1; j > s; j--) if (chars[j] === ' ') { cut = j + 1; break; }
    starts.push(s = cut);
  }
  return starts;
}

// How much larger than 12 px a short text is drawn: as large as fits on one line, at most 2.5×,
// so that a few characters and their arcs are not a speck in the corner of a wide panel.
export const MAX_ZOOM = 2.5;
export function textZoom(L, width, cw) {
  return Math.max(1, Math.min(MAX_ZOOM, (width - 8) / (Math.max(1, L) * cw)));
}

// The keys row i draws, [j, A, Â] for j <= i in order: those of weight >= MIN_WEIGHT in A or Â;
// undrawn: A's weight on the others.
export function drawnKeys(A, Ahat, L, i) {
  const keys = [];
  let undrawn = 0;
  for (let j = 0; j <= i; j++) {
    const a = A[i * L + j], b = Ahat[i * L + j];
    if (Math.max(a, b) >= MIN_WEIGHT) keys.push([j, a, b]); else undrawn += a;
  }
  return { keys, undrawn };
}

// An arc's stroke width for weight w: from 0.6 px (a faint arc stays visible) to 9.6 px at 1.
export const arcWidth = (w) => 0.6 + 9 * Math.min(1, w);

// The view's subtitle; before: the exact weight on keys before the window (undefined: no window).
export function lineSubtitle({ keys, undrawn, before }) {
  return `${keys.length} key${keys.length === 1 ? '' : 's'} drawn; undrawn exact weight ${fmt(undrawn, 2)}` +
    `${before === undefined ? '' : ` in the window, ${fmt(before, 2)} on keys before it`}`;
}

export class LineView {
  constructor(svg, legend) {
    this.svg = svg;
    legend.innerHTML = '<span class="item"><svg width="22" height="8"><line x1="0" y1="4" x2="22" y2="4" stroke="var(--exact)" stroke-width="3"/></svg> exact A (arcs above)</span>' +
      '<span class="item"><svg width="22" height="8"><line x1="0" y1="4" x2="22" y2="4" stroke="var(--approx)" stroke-width="3"/></svg> approximation Â (arcs below)</span>' +
      '<span class="item">wider for more weight; keys under 1 % in both not drawn</span>';
  }

  // before: in a window of a longer text, the exact weight of row i on keys before the window.
  draw({ chars, A, Ahat, L, i, before }) {
    const svg = this.svg;
    const width = Math.max(240, svg.getBoundingClientRect().width || 600);
    const advance12 = charWidth(), z = textZoom(L, width, advance12), cw = advance12 * z;
    const perLine = Math.max(10, Math.floor((width - 8) / cw));
    const starts = lineStarts(chars, L, perLine);
    const lines = starts.length, lineH = 46 * z, top = 22 * z;
    const line = new Int32Array(L);
    for (let l = 0; l < lines; l++) line.fill(l, starts[l], starts[l + 1] ?? L);
    const height = top + lines * lineH + 4;
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    svg.style.height = `${height}px`;
    svg.replaceChildren();
    // (x, y) of character j: the middle of its cell, on the line's baseline minus 4 (× zoom)
    const pos = (j) => [4 + (j - starts[line[j]]) * cw + cw / 2, top + line[j] * lineH + 12 * z];
    const { keys, undrawn } = drawnKeys(A, Ahat, L, i);
    // arcs: exact above (from the top of the characters), approximated below
    const [qx, qy] = pos(i);
    const arcs = el('g', { class: 'arcs' }, svg);
    for (const [j, a, b] of keys) {
      const [x, y] = pos(j);
      for (const [w, dir, cls] of [[a, -1, 'exact'], [b, 1, 'approx']]) {
        if (!(w >= MIN_WEIGHT / 4)) continue;
        const y0 = dir < 0 ? y - 11 * z : y + 5 * z, y1 = dir < 0 ? qy - 11 * z : qy + 5 * z;
        const lift = Math.min(lineH / 2 - 2, 6 * z + Math.abs(qx - x) / 12 + Math.abs(qy - y) / 4);
        const cy = (dir < 0 ? Math.min(y0, y1) : Math.max(y0, y1)) + dir * lift;
        el('path', { d: `M${qx.toFixed(1)},${y1} Q${((x + qx) / 2).toFixed(1)},${cy.toFixed(1)} ${x.toFixed(1)},${y0}`,
          class: cls, 'stroke-width': arcWidth(w).toFixed(2) }, arcs).appendChild(
          Object.assign(document.createElementNS(NS, 'title'), { textContent: `key ${j} ${JSON.stringify(chars[j])}: ${cls === 'exact' ? 'A' : 'Â'} = ${fmt(w)}` }));
      }
    }
    // the text, one <text> per line, over the arcs: an arc to a key some lines up crosses the lines
    // between, and the text's halo (style.css) keeps them legible where it does
    const text = el('g', { class: 'line-text' }, svg);
    if (z > 1) text.style.fontSize = `${(12 * z).toFixed(1)}px`;
    for (let l = 0; l < lines; l++) {
      const t = el('text', { x: 4, y: top + l * lineH + 16 * z, 'xml:space': 'preserve' }, text);
      const end = starts[l + 1] ?? L;
      t.textContent = chars.slice(starts[l], end).replace(/\n/g, '⏎');
      t.setAttribute('textLength', String((end - starts[l]) * cw));
    }
    // key highlights over the text: translucent, so that they shade the halo with the glyphs
    const marks = el('g', { class: 'key-marks' }, svg);
    for (const [j, a] of keys) {
      const [x, y] = pos(j);
      el('rect', { x: x - cw / 2, y: y - 11 * z, width: cw, height: 15 * z, fill: `rgba(29, 35, 48, ${Math.min(0.35, 0.05 + a).toFixed(3)})` }, marks);
    }
    el('rect', { x: qx - cw / 2 - 1, y: qy - 12 * z, width: cw + 2, height: 17 * z, class: 'query-mark' }, marks);
    svg.dataset.keys = String(keys.length);
    svg.dataset.query = String(i);
    document.getElementById('line-query').textContent = `${i} “${shownChar(chars[i])}”`;
    document.getElementById('line-sub').textContent = lineSubtitle({ keys, undrawn, before });
  }
}
