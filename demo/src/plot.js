// Small SVG line plots with linear or log axes, bands, markers, reference lines and an HTML
// legend. drawPlot(svg, spec) redraws everything; the viewBox follows the element's size.
import { fmt, pow10Label } from './colors.js';

const NS = 'http://www.w3.org/2000/svg';
// Widths of a character, in px, of the tick labels (10 px) and of the empty plot's message (12 px):
// a little over the sans-serif digits' and letters' average, so that estimates err wide.
const TICK_CHAR = 6.2, EMPTY_CHAR = 6.6;

function el(name, attrs = {}, parent) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
  parent?.appendChild(node);
  return node;
}

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

function axis({ log, domain, pixels, format, integer }) {
  let [lo, hi] = domain;
  if (log) {
    lo = Math.log10(lo);
    hi = Math.log10(hi);
  }
  if (!(hi > lo)) { hi = lo + 1; }
  const [p0, p1] = pixels;
  const map = (v) => {
    const t = log ? Math.log10(v) : v;
    return p0 + ((t - lo) / (hi - lo)) * (p1 - p0);
  };
  const ticks = [];
  if (log) {
    const span = hi - lo;
    const every = Math.max(1, Math.ceil(span / 7));
    // An axis with ticks between its powers of ten labels them all alike: as decimals (0.2, 0.1,
    // 0.05) where they are, powers of ten and their multiples beyond (10⁻⁴, 2·10⁻⁴); an axis of
    // counts (`format`) as it labels the others.
    const between = span < 3;
    const label = (v, e) => (format ? format(v) : !between ? pow10Label(e) : v >= 1e-3 && v < 1e5 ? String(Number(v.toPrecision(1)))
      : Number.isInteger(e) ? pow10Label(e) : fmt(v, 1));
    for (let e = Math.ceil(lo - 1e-9); e <= hi + 1e-9; e += every) ticks.push({ v: 10 ** e, label: label(10 ** e, e), major: true });
    if (between) {
      for (let e = Math.floor(lo); e <= hi; e++) for (const f of [2, 5]) {
        const v = f * 10 ** e, t = Math.log10(v);
        if (t >= lo && t <= hi) ticks.push({ v, label: label(v, t), major: false });
      }
    }
  } else {
    // an axis of indices (`integer`) has no tick between two of them: a short one would label 0.5 "1"
    const step = integer ? Math.max(1, niceStep(hi - lo, 5)) : niceStep(hi - lo, 5);
    // (+ 0: a tick at 0, not at −0, where the axis starts below 0)
    for (let v = Math.ceil(lo / step) * step + 0; v <= hi + step * 1e-9; v += step) ticks.push({ v, label: format ? format(v) : fmt(v, 2), major: true });
  }
  return { map, ticks, lo, hi, log };
}

// Data range of the series (positive values only on log axes), padded.
function extent(values, log, pad = 0.05) {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (!finite.length) return log ? [1, 10] : [0, 1];
  let lo = Math.min(...finite), hi = Math.max(...finite);
  if (log) {
    let a = Math.log10(lo), b = Math.log10(hi);
    if (b - a < 0.5) { a -= 0.25; b += 0.25; }
    const p = (b - a) * pad;
    return [10 ** (a - p), 10 ** (b + p)];
  }
  if (hi === lo) { hi = lo + 1; }
  const p = (hi - lo) * pad;
  return [lo - p, hi + p];
}

const MARKERS = {
  circle: (g, x, y, c) => el('circle', { cx: x, cy: y, r: 3, fill: c }, g),
  square: (g, x, y, c) => el('rect', { x: x - 2.7, y: y - 2.7, width: 5.4, height: 5.4, fill: c }, g),
  triangle: (g, x, y, c) => el('path', { d: `M${x},${y - 3.6}L${x + 3.4},${y + 2.6}L${x - 3.4},${y + 2.6}Z`, fill: c }, g),
  diamond: (g, x, y, c) => el('path', { d: `M${x},${y - 3.8}L${x + 3.4},${y}L${x},${y + 3.8}L${x - 3.4},${y}Z`, fill: c }, g),
  cross: (g, x, y, c) => el('path', { d: `M${x - 3},${y - 3}L${x + 3},${y + 3}M${x - 3},${y + 3}L${x + 3},${y - 3}`, stroke: c, 'stroke-width': 1.6 }, g),
  ring: (g, x, y, c) => el('circle', { cx: x, cy: y, r: 6, fill: 'none', stroke: c, 'stroke-width': 1.6 }, g),
};

/**
 * spec: { x: { log, domain?, pad?, label, format?, integer? }, y: { log, domain?, pad?, label },
 *   (pad: the data range's margin, a fraction of it, where there is no domain; integer: linear
 *   ticks at whole numbers only)
 *   series: [{ label, color, points: [[x, y, title?, key?]], dash?, width?, band?: [[x, lo, hi]], marker?, legend? }],
 *   (a point's key, on its marker as data-key, tells a click which point it was)
 *   vlines: [{ x, label, color }], cursorX?, empty?: 'message', legendRoot?: element,
 *   onRedraw?: (geometry) => {}, called when a resize draws the plot again (below) }
 */
// Element sizes from a ResizeObserver, so redrawing never forces a synchronous layout. A plot
// whose element changes size after it was drawn (not only with the window: a mode switch shows
// or hides the panels beside it, in the same task that draws it) is drawn again from its last
// spec, at the new size, before that frame is painted; spec.onRedraw(geometry) then tells its owner.
const sizes = new WeakMap();
const drawn = new WeakMap();  // svg → [spec, width, height] of its last drawing
const observer = typeof ResizeObserver === 'function'
  ? new ResizeObserver((entries) => {
    for (const e of entries) {
      const { width: w, height: h } = e.contentRect;
      sizes.set(e.target, [w, h]);
      const last = drawn.get(e.target);
      const [width, height] = plotSize(w, h);
      if (!last || !(w > 0 && h > 0) || (width === last[1] && height === last[2])) continue;  // hidden (0 × 0): drawn again once shown
      const geometry = drawPlot(e.target, last[0]);
      last[0].onRedraw?.(geometry);
    }
  })
  : null;
// The viewBox of an element of w × h px (0 before it is laid out).
function plotSize(w, h) {
  return [Math.max(200, Math.round(w || 480)), Math.max(120, Math.round(h || 260))];
}
function sizeOf(svg) {
  if (!sizes.has(svg) || !observer) {
    observer?.observe(svg);
    sizes.set(svg, [svg.clientWidth, svg.clientHeight]);
  }
  return sizes.get(svg);
}

export function drawPlot(svg, spec) {
  const [width, height] = plotSize(...sizeOf(svg));
  drawn.set(svg, [spec, width, height]);
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.replaceChildren();
  const m = { l: 56, r: 12, t: 10, b: 36, ...spec.margin };
  const series = spec.series.filter((s) => s.points.length);
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => [...s.points.map((p) => p[1]), ...(s.band ?? []).flatMap((b) => [b[1], b[2]])]);
  const xa = axis({ ...spec.x, domain: spec.x.domain ?? extent(xs, spec.x.log, spec.x.pad ?? 0.02), pixels: [m.l, width - m.r] });
  const ya = axis({ ...spec.y, domain: spec.y.domain ?? extent(ys, spec.y.log, spec.y.pad ?? 0.05), pixels: [height - m.b, m.t] });
  const plot = el('g', {}, svg);
  const clipId = `clip-${Math.random().toString(36).slice(2)}`;
  const defs = el('defs', {}, plot);
  const clip = el('clipPath', { id: clipId }, defs);
  el('rect', { x: m.l, y: m.t, width: width - m.l - m.r, height: height - m.t - m.b }, clip);

  // Grid and ticks. An x label that would touch one already placed is left out (the major ticks'
  // first), so that a narrow plot shows fewer labels rather than labels printed over each other.
  const grid = el('g', { class: 'grid' }, plot);
  const placed = [];
  const fits = (x, label) => {
    const half = (label.length * TICK_CHAR) / 2 + 3;
    if (placed.some(([a, b]) => x - half < b && x + half > a)) return false;
    placed.push([x - half, x + half]);
    return true;
  };
  const labelled = new Set([...xa.ticks.filter((t) => t.major), ...xa.ticks.filter((t) => !t.major)]
    .filter((t) => t.label && fits(xa.map(t.v), t.label)));
  for (const t of xa.ticks) {
    const x = xa.map(t.v);
    el('line', { x1: x, x2: x, y1: m.t, y2: height - m.b, class: t.major ? 'major' : 'minor' }, grid);
    if (labelled.has(t)) el('text', { x, y: height - m.b + 14, 'text-anchor': 'middle', class: 'tick' }, grid).textContent = t.label;
  }
  for (const t of ya.ticks) {
    const y = ya.map(t.v);
    el('line', { x1: m.l, x2: width - m.r, y1: y, y2: y, class: t.major ? 'major' : 'minor' }, grid);
    if (t.label) el('text', { x: m.l - 5, y: y + 4, 'text-anchor': 'end', class: 'tick' }, grid).textContent = t.label;
  }
  el('rect', { x: m.l, y: m.t, width: width - m.l - m.r, height: height - m.t - m.b, class: 'frame' }, plot);
  el('text', { x: (m.l + width - m.r) / 2, y: height - 4, 'text-anchor': 'middle', class: 'axis-label' }, plot).textContent = spec.x.label;
  el('text', { x: 12, y: (m.t + height - m.b) / 2, 'text-anchor': 'middle', class: 'axis-label',
    transform: `rotate(-90 12 ${(m.t + height - m.b) / 2})` }, plot).textContent = spec.y.label;

  const body = el('g', { 'clip-path': `url(#${clipId})` }, plot);
  const ok = (x, y) => Number.isFinite(x) && Number.isFinite(y) && (!xa.log || x > 0) && (!ya.log || y > 0);
  for (const s of series) {
    if (s.band?.length) {
      const pts = s.band.filter((b) => ok(b[0], b[1]) && ok(b[0], b[2]));
      if (pts.length > 1) {
        const d = pts.map((b, n) => `${n ? 'L' : 'M'}${xa.map(b[0]).toFixed(1)},${ya.map(b[2]).toFixed(1)}`).join('') +
          pts.slice().reverse().map((b) => `L${xa.map(b[0]).toFixed(1)},${ya.map(b[1]).toFixed(1)}`).join('') + 'Z';
        el('path', { d, fill: s.color, 'fill-opacity': 0.14, stroke: 'none' }, body);
      }
    }
  }
  for (const s of series) {
    // Break the line where a point cannot be drawn (e.g. ≤ 0 on a log axis).
    let d = '', pen = false;
    for (const p of s.points) {
      if (!ok(p[0], p[1])) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${xa.map(p[0]).toFixed(1)},${ya.map(p[1]).toFixed(1)}`;
      pen = true;
    }
    if (d) el('path', { d, fill: 'none', stroke: s.color, 'stroke-width': s.width ?? 1.8, 'stroke-dasharray': s.dash,
      'stroke-linejoin': 'round', class: 'series' }, body);
    if (s.marker) {
      const g = el('g', {}, body);
      for (const p of s.points) {
        if (!ok(p[0], p[1])) continue;
        const mk = MARKERS[s.marker](g, xa.map(p[0]), ya.map(p[1]), s.color);
        if (p[2]) el('title', {}, mk).textContent = p[2];
        if (p[3] !== undefined) mk.setAttribute('data-key', String(p[3]));
      }
    }
  }
  for (const v of spec.vlines ?? []) {
    if (!ok(v.x, ya.log ? 1 : 0)) continue;
    const x = xa.map(v.x);
    el('line', { x1: x, x2: x, y1: m.t, y2: height - m.b, stroke: v.color ?? '#444', 'stroke-dasharray': '4 3', 'stroke-width': 1.2 }, body);
    if (v.label) {
      const right = x < (m.l + width - m.r) / 2;
      el('text', { x: x + (right ? 4 : -4), y: m.t + 12, 'text-anchor': right ? 'start' : 'end', class: 'vlabel' }, body).textContent = v.label;
    }
  }
  if (spec.cursorX !== undefined && spec.cursorX !== null) {
    const x = xa.map(spec.cursorX);
    el('line', { x1: x, x2: x, y1: m.t, y2: height - m.b, class: 'cursor' }, body);
  }
  if (!series.length && spec.empty) {
    // in lines that fit the frame
    const perLine = Math.max(12, Math.floor((width - m.l - m.r - 16) / EMPTY_CHAR));
    const lines = spec.empty.split(' ').reduce((out, word) => {
      if (out.length && `${out.at(-1)} ${word}`.length <= perLine) out[out.length - 1] += ` ${word}`;
      else out.push(word);
      return out;
    }, []);
    const cx = (m.l + width - m.r) / 2;
    const text = el('text', { x: cx, y: (m.t + height - m.b) / 2 - ((lines.length - 1) * 16) / 2, 'text-anchor': 'middle', class: 'empty' }, plot);
    lines.forEach((line, i) => { el('tspan', { x: cx, dy: i ? 16 : 0 }, text).textContent = line; });
  }
  if (spec.legendRoot) {
    spec.legendRoot.innerHTML = spec.series.filter((s) => s.legend !== false && (s.points.length || s.alwaysInLegend))
      .map((s) => `<span class="item">${swatch(s)}${s.label}</span>`)
      .join('');
  }
  return { x: xa, y: ya, margin: m, width, height };
}

// A legend's picture of a series: its line (colour, dash) with its marker in the middle.
export function swatch({ color, dash, width, marker }) {
  const svg = document.createElementNS(NS, 'svg');
  // overflow: a ring (r = 6) is taller than the line's box
  for (const [k, v] of Object.entries({ width: 30, height: 10, overflow: 'visible', 'aria-hidden': 'true' })) svg.setAttribute(k, v);
  el('line', { x1: 1, x2: 29, y1: 5, y2: 5, stroke: color, 'stroke-width': width ?? 1.8, 'stroke-dasharray': dash }, svg);
  if (marker) MARKERS[marker](svg, 15, 5, color);
  return svg.outerHTML;
}
