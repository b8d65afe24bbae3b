// The page's line plots (demo/src/plot.js), drawn into a stand-in for the SVG DOM and read back:
// the axes span the data, their ticks are round numbers (linear: one step of 1, 2 or 5 × 10^k;
// log: powers of ten) inside the frame, every point lies where the axes put it, a line breaks
// where a point cannot be drawn, x labels never overlap, an axis of indices ticks whole numbers
// only, and an empty plot's message fits.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { drawPlot } from '../../demo/src/plot.js';
import { keyAxis } from '../../demo/src/row-inspector.js';
import { rng } from './helpers.mjs';

class Element {
  constructor(name) {
    this.name = name;
    this.attrs = {};
    this.children = [];
    this.textContent = '';
  }

  setAttribute(key, value) { this.attrs[key] = String(value); }
  appendChild(child) { this.children.push(child); return child; }
  replaceChildren() { this.children = []; }
  all(test) {
    const found = [];
    const walk = (e) => { if (test(e)) found.push(e); e.children.forEach(walk); };
    walk(this);
    return found;
  }
}
globalThis.document ??= { createElementNS: (ns, name) => new Element(name) };

function svg(width, height) {
  const root = new Element('svg');
  root.clientWidth = width;
  root.clientHeight = height;
  return root;
}

// The points of a path's d: runs of [x, y] between its M's.
function runs(d) {
  return d.split('M').filter(Boolean).map((run) => run.split('L').map((p) => p.split(',').map(Number)));
}

const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 0.051, `${what}: ${a} vs ${b}`);  // paths carry 0.1 px

function checkLinearAxis(axis, data, pixels, what) {
  const { lo, hi, ticks, map } = axis;
  assert.ok(lo <= Math.min(...data) && hi >= Math.max(...data), `${what}: [${lo}, ${hi}] holds the data`);
  close(map(lo), pixels[0], `${what} lo`);
  close(map(hi), pixels[1], `${what} hi`);
  assert.ok(ticks.length >= 3 && ticks.length <= 8, `${what}: ${ticks.length} ticks`);
  const step = ticks[1].v - ticks[0].v;
  // Every multiple of the step inside the axis, none left out at either end.
  assert.ok(ticks[0].v - step < lo && ticks.at(-1).v + step > hi, `${what}: ticks from the first multiple of ${step} to the last`);
  const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
  assert.ok([1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6), `${what}: step ${step}`);
  for (const [n, t] of ticks.entries()) {
    assert.ok(t.v >= lo - 1e-9 * (hi - lo) && t.v <= hi + 1e-9 * (hi - lo), `${what}: tick ${t.v} in [${lo}, ${hi}]`);
    if (n) assert.ok(Math.abs(t.v - ticks[n - 1].v - step) <= 1e-9 * Math.abs(step) + 1e-12 * Math.abs(t.v), `${what}: even steps`);
    assert.ok(Math.abs(t.v / step - Math.round(t.v / step)) < 1e-6, `${what}: tick ${t.v} a multiple of ${step}`);
  }
}

test('linear axes: span the data, round ticks inside the frame, every point where the axes put it', () => {
  const g = rng(5);
  for (const [n, [offset, scale, width]] of [[0, 1, 480], [-3, 0.02, 300], [1e4, 900, 640], [0.5, 1e-5, 200], [7, 0, 480]].entries()) {
    const points = Array.from({ length: 40 }, (_, i) => [i * 0.25 - 2, offset + scale * g.normal(), `point ${i}`]);
    const root = svg(width, 260);
    const geom = drawPlot(root, { x: { label: 'x' }, y: { label: 'y' }, series: [{ label: 's', color: '#000', points }] });
    const { margin: m } = geom;
    checkLinearAxis(geom.x, points.map((p) => p[0]), [m.l, geom.width - m.r], `x ${n}`);
    checkLinearAxis(geom.y, points.map((p) => p[1]), [geom.height - m.b, m.t], `y ${n}`);
    // The y axis pads the data by 5% of its range each side (a constant series spans 1).
    const ys = points.map((p) => p[1]), spread = Math.max(...ys) - Math.min(...ys) || 1;
    assert.ok(Math.abs(geom.y.hi - geom.y.lo - 1.1 * spread) <= 1e-9 * Math.max(1, Math.abs(offset)), `y ${n} padding`);
    // The one series' path: every point, in order, mapped by the axes (to 0.1 px) and inside the frame.
    const [path] = root.all((e) => e.attrs.class === 'series');
    const [run] = runs(path.attrs.d);
    assert.equal(run.length, points.length);
    for (const [i, [px, py]] of run.entries()) {
      close(px, geom.x.map(points[i][0]), `x of point ${i}`);
      close(py, geom.y.map(points[i][1]), `y of point ${i}`);
      assert.ok(px >= m.l - 0.05 && px <= geom.width - m.r + 0.05 && py >= m.t - 0.05 && py <= geom.height - m.b + 0.05);
    }
    // A grid line at every tick.
    const lines = root.all((e) => e.name === 'line' && (e.attrs.class === 'major' || e.attrs.class === 'minor'));
    assert.equal(lines.length, geom.x.ticks.length + geom.y.ticks.length);
  }
});

test('log axes: ticks at the powers of ten inside, 2 and 5 between them on short spans; a line breaks at values ≤ 0', () => {
  for (const [lo, hi] of [[1e-6, 0.3], [0.02, 0.9], [3, 4], [1e-12, 1e3]]) {
    const points = Array.from({ length: 30 }, (_, i) => [i + 1, lo * (hi / lo) ** (i / 29)]);
    points[10][1] = 0;   // off a log axis: the line stops here and starts again
    points[20][1] = -1;
    const root = svg(480, 260);
    const geom = drawPlot(root, { x: { label: 'x' }, y: { label: 'weight', log: true }, series: [{ label: 's', color: '#000', points }] });
    const y = geom.y;
    assert.ok(10 ** y.lo <= lo && 10 ** y.hi >= hi, `[${10 ** y.lo}, ${10 ** y.hi}] holds [${lo}, ${hi}]`);
    const majors = y.ticks.filter((t) => t.major).map((t) => Math.log10(t.v));
    for (const e of majors) assert.ok(Math.abs(e - Math.round(e)) < 1e-9 && e >= y.lo - 1e-9 && e <= y.hi + 1e-9, `major 10^${e}`);
    // Every power of ten inside is a major tick (at most 7 of them; more spans take every k-th).
    const inside = Math.floor(y.hi + 1e-9) - Math.ceil(y.lo - 1e-9) + 1;
    const every = Math.max(1, Math.ceil((y.hi - y.lo) / 7));
    assert.equal(majors.length, Math.ceil(inside / every), `${lo}..${hi}`);
    const minors = y.ticks.filter((t) => !t.major);
    if (y.hi - y.lo < 3) {
      let between = 0;  // 2 and 5 times each power of ten inside
      for (let e = Math.floor(y.lo) - 1; e <= y.hi; e++) for (const f of [2, 5]) if (Math.log10(f * 10 ** e) >= y.lo && Math.log10(f * 10 ** e) <= y.hi) between++;
      assert.equal(minors.length, between, `${lo}..${hi}: minor ticks`);
      for (const t of minors) {
        const m = t.v / 10 ** Math.floor(Math.log10(t.v) + 1e-12);
        assert.ok(Math.abs(m - 2) < 1e-9 || Math.abs(m - 5) < 1e-9, `minor ${t.v}`);
        assert.ok(Math.log10(t.v) >= y.lo && Math.log10(t.v) <= y.hi);
      }
    } else assert.equal(minors.length, 0);
    close(y.map(10 ** y.lo), geom.height - geom.margin.b, 'bottom');
    close(y.map(10 ** y.hi), geom.margin.t, 'top');
    const [path] = root.all((e) => e.attrs.class === 'series');
    assert.deepEqual(runs(path.attrs.d).map((r) => r.length), [10, 9, 9], 'three runs around the two points ≤ 0');
    const drawn = points.filter((p) => p[1] > 0);
    for (const [i, [, py]] of runs(path.attrs.d).flat().entries()) close(py, y.map(drawn[i][1]), `point ${i}`);
  }
});

test('a log axis labels its ticks alike: decimals where it has ticks between its powers of ten, powers of ten where it has none', () => {
  const labels = (lo, hi) => {
    const geom = drawPlot(svg(480, 260), { x: { label: 'x' }, y: { label: 'y', log: true, domain: [lo, hi] }, series: [{ label: 's', color: '#000', points: [[1, lo], [2, hi]] }] });
    return geom.y.ticks.slice().sort((a, b) => a.v - b.v).map((t) => t.label);
  };
  // "Which heads are hard" under hard VQ: its axis read 10⁻¹ and 10⁻² among 0.2 and 0.05
  assert.deepEqual(labels(0.004, 2.5), ['0.005', '0.01', '0.02', '0.05', '0.1', '0.2', '0.5', '1', '2']);
  assert.deepEqual(labels(8, 600), ['10', '20', '50', '100', '200', '500']);
  assert.deepEqual(labels(1.5e-5, 3e-4), ['2·10⁻⁵', '5·10⁻⁵', '10⁻⁴', '2·10⁻⁴']);
  assert.deepEqual(labels(1e-6, 0.5), ['10⁻⁶', '10⁻⁵', '10⁻⁴', '10⁻³', '10⁻²', '10⁻¹']);
});

test('x labels never overlap, however narrow the plot; the major ticks are labelled before the others', () => {
  for (const width of [200, 320, 480, 900]) {
    for (const [log, at] of [[false, (i) => i * 1234.5], [true, (i) => 10 ** (i / 4)], [true, (i) => 1 + i * 6]]) {
      const points = Array.from({ length: 50 }, (_, i) => [at(i), i]);
      const root = svg(width, 200);
      const geom = drawPlot(root, { x: { label: 'x', log }, y: { label: 'y' }, series: [{ label: 's', color: '#000', points }] });
      const bottom = geom.height - geom.margin.b + 14;
      const labels = root.all((e) => e.name === 'text' && e.attrs.class === 'tick' && Number(e.attrs.y) === bottom);
      assert.ok(labels.length >= 2, `${width} px${log ? ', log' : ''}: ${labels.length} labels`);
      // Each label's extent at 10 px sans-serif is under 6.2 px a character.
      const spans = labels.map((e) => [Number(e.attrs.x), (e.textContent.length * 6.2) / 2]).sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < spans.length; i++) {
        assert.ok(spans[i][0] - spans[i][1] >= spans[i - 1][0] + spans[i - 1][1], `${width} px: "${labels[i].textContent}" over its neighbour`);
      }
      const firstMajor = geom.x.ticks.find((t) => t.major);
      assert.ok(labels.some((e) => e.textContent === firstMajor.label), `${width} px: the first major tick is labelled`);
      // From 1 to 300 on a log axis the three powers of ten have room, and keep it before 2, 5, 20…
      if (log && at(49) < 1000) {
        assert.ok(geom.x.ticks.some((t) => !t.major), 'minor ticks too');
        for (const t of geom.x.ticks.filter((t) => t.major)) assert.ok(labels.some((e) => e.textContent === t.label), `${width} px: ${t.label} labelled`);
      }
    }
  }
});

test('bands, reference lines and the cursor sit on the axes; an empty plot says so in lines that fit', () => {
  const points = Array.from({ length: 10 }, (_, i) => [i, i * i]);
  const band = points.map(([x, y]) => [x, y - 3, y + 3]);
  const root = svg(480, 260);
  const geom = drawPlot(root, {
    x: { label: 'x' }, y: { label: 'y' },
    series: [{ label: 's', color: '#123', points, band }],
    vlines: [{ x: 4.5, label: 'here' }], cursorX: 7,
  });
  const fill = root.all((e) => e.name === 'path' && e.attrs['fill-opacity'] !== undefined)[0];
  const corners = runs(fill.attrs.d.replace('Z', ''))[0];
  assert.equal(corners.length, 20);
  for (const [i, [px, py]] of corners.entries()) {
    const b = i < 10 ? band[i] : band[19 - i];
    close(px, geom.x.map(b[0]), `band x ${i}`);
    close(py, geom.y.map(i < 10 ? b[2] : b[1]), `band y ${i}`);
  }
  const vline = root.all((e) => e.name === 'line' && e.attrs['stroke-dasharray'] === '4 3')[0];
  assert.equal(Number(vline.attrs.x1), geom.x.map(4.5));
  const cursor = root.all((e) => e.attrs.class === 'cursor')[0];
  assert.equal(Number(cursor.attrs.x1), geom.x.map(7));

  const message = 'No rows yet: pick a head and a text to see how far the approximation is from the exact weights here';
  for (const width of [200, 480]) {
    const empty = svg(width, 200);
    const g = drawPlot(empty, { x: { label: 'x' }, y: { label: 'y' }, series: [{ label: 's', color: '#000', points: [] }], empty: message });
    const lines = empty.all((e) => e.name === 'tspan').map((e) => e.textContent);
    assert.equal(lines.join(' '), message);
    const room = Math.max(12, Math.floor((g.width - g.margin.l - g.margin.r - 16) / 6.6));
    for (const line of lines) assert.ok(line.length <= room, `${width} px: "${line}" is over ${room} characters`);
    if (width === 200) assert.ok(lines.length >= 3);
  }
});

test('an integer axis (the row inspector\'s keys): ticks at whole numbers only, each label once, however few the keys', () => {
  for (const S of [1, 2, 3, 4, 5, 7, 12, 40, 256]) {
    for (const width of [200, 436, 672]) {
      const root = svg(width, 170);
      const points = Array.from({ length: S }, (_, j) => [j, 1 / S]);
      const geom = drawPlot(root, { x: keyAxis(S, S - 1, true), y: { label: 'weight' }, series: [{ label: 's', color: '#000', points }] });
      const ticks = geom.x.ticks.map((t) => t.v);
      for (const v of ticks) assert.ok(Number.isInteger(v) && v >= 0 && v <= S - 1, `${S} keys, ${width} px: a tick at ${v}`);
      assert.ok(ticks.includes(0), `${S} keys: key 0 has a tick`);
      if (S <= 5) assert.deepEqual(ticks, Array.from({ length: S }, (_, j) => j), `${S} keys: one tick per key`);
      const bottom = geom.height - geom.margin.b + 14;
      const labels = root.all((e) => e.name === 'text' && e.attrs.class === 'tick' && Number(e.attrs.y) === bottom).map((e) => e.textContent);
      assert.equal(new Set(labels).size, labels.length, `${S} keys, ${width} px: labels ${labels.join(' ')}`);
      for (const label of labels) assert.match(label, /^\d+$/);
    }
  }
  // a plain linear axis over the same span keeps its half steps
  const geom = drawPlot(svg(480, 170), { x: { domain: [-0.5, 1.5], label: 'x' }, y: { label: 'y' }, series: [] });
  assert.deepEqual(geom.x.ticks.map((t) => t.v), [-0.5, 0, 0.5, 1, 1.5]);
});
