#!/usr/bin/env node
// Draws the training curves that train/train.py records (`curve` in each model's record:
// training bits/char averaged since the last point, held-out bits/char on fixed windows) into
// docs/training-curves.svg, one panel per model, one colour per seed.
//   node train/curves.mjs
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

const MODELS = new URL('./models/', import.meta.url);
const OUT = new URL('../docs/training-curves.svg', import.meta.url);

export function records(dir = MODELS) {
  return readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'manifest.json')
    .map((f) => JSON.parse(readFileSync(new URL(f, dir), 'utf8')))
    .filter((r) => r.curve?.points?.length)
    .sort((a, b) => a.name.localeCompare(b.name));
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c'];
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function svg(list) {
  const groups = new Map();
  for (const r of list) {
    const base = r.name.replace(/-seed\d+$/, '');
    if (!groups.has(base)) groups.set(base, []);
    groups.get(base).push(r);
  }
  const W = 360, H = 240, pad = { l: 48, r: 12, t: 28, b: 40 }, gap = 16;
  const panels = [...groups.entries()];
  const width = panels.length * (W + gap) - gap + 2, height = H + 40;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`];
  panels.forEach(([base, runs], p) => {
    const x0 = p * (W + gap) + 1;
    const points = runs.flatMap((r) => r.curve.points);
    const steps = Math.max(...points.map((q) => q.step));
    const ys = points.flatMap((q) => [q.trainBpc, q.heldOutBpc]);
    const lo = Math.floor(Math.min(...ys) * 10) / 10, hi = Math.min(Math.ceil(Math.max(...ys) * 10) / 10, lo + 2);
    const X = (s) => x0 + pad.l + (s / steps) * (W - pad.l - pad.r);
    const Y = (v) => pad.t + (1 - (Math.min(v, hi) - lo) / (hi - lo)) * (H - pad.t - pad.b);
    parts.push(`<text x="${x0 + pad.l}" y="16" font-weight="bold">${esc(base)}</text>`);
    parts.push(`<rect x="${X(0)}" y="${Y(hi)}" width="${X(steps) - X(0)}" height="${Y(lo) - Y(hi)}" fill="none" stroke="#999"/>`);
    for (let k = 0; k <= 4; k++) {
      const v = lo + (k / 4) * (hi - lo);
      parts.push(`<text x="${X(0) - 4}" y="${Y(v) + 4}" text-anchor="end">${v.toFixed(2)}</text>`);
      const s = Math.round((k / 4) * steps);
      parts.push(`<text x="${X(s)}" y="${Y(lo) + 14}" text-anchor="middle">${s}</text>`);
    }
    parts.push(`<text x="${(X(0) + X(steps)) / 2}" y="${Y(lo) + 28}" text-anchor="middle">step</text>`);
    parts.push(`<text transform="translate(${x0 + 12} ${(Y(lo) + Y(hi)) / 2}) rotate(-90)" text-anchor="middle">bits per character</text>`);
    const short = runs[0].training.shortContextFirst;
    if (short) {  // where the training context changes
      parts.push(`<line x1="${X(short.steps)}" y1="${Y(hi)}" x2="${X(short.steps)}" y2="${Y(lo)}" stroke="#999" stroke-dasharray="2 2"/>`);
      parts.push(`<text x="${X(short.steps) + 3}" y="${Y(lo) - 4}" fill="#666">context ${short.context} → ${runs[0].training.context}</text>`);
    }
    runs.forEach((r, i) => {
      const color = COLORS[i % COLORS.length];
      const line = (key, dash) => `<polyline fill="none" stroke="${color}" stroke-width="1.5"${dash ? ' stroke-dasharray="4 3"' : ''} points="${r.curve.points.map((q) => `${X(q.step).toFixed(1)},${Y(q[key]).toFixed(1)}`).join(' ')}"/>`;
      parts.push(line('trainBpc', true), line('heldOutBpc', false));
      parts.push(`<text x="${X(steps) - 4}" y="${Y(hi) + 14 + 13 * i}" text-anchor="end" fill="${color}">seed ${r.training.seedIndex ?? 1} (${r.training.seed}): held out ${r.curve.points.at(-1).heldOutBpc.toFixed(3)}</text>`);
    });
  });
  parts.push(`<text x="4" y="${height - 6}">solid: held-out bits/char (${list[0]?.curve.heldOutWindows ?? ''} fixed windows, float32, the W of the moment); dashed: training bits/char, mean since the last point</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(OUT, svg(records()));
  console.log(`wrote ${OUT.pathname}`);
}
