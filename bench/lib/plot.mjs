// Log-log line plots as hand-written SVG: time (ms) against L, one line per series.

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function formatL(L) {
  if (L >= 1048576 && L % 1048576 === 0) return `${L / 1048576}M`;
  if (L >= 1024 && L % 1024 === 0) return `${L / 1024}K`;
  return String(L);
}

function formatMs(ms) {
  if (ms >= 1000) return `${ms / 1000} s`;
  if (ms >= 1) return `${ms} ms`;
  return `${+(ms * 1000).toPrecision(3)} µs`;
}

// series: [{ name, color, dash, points: [[L, ms], ...] }]
export function logLogPlot({ title, subtitle = '', series, xLabel = 'sequence length L (log scale)', yLabel = 'time per call (log scale)' }) {
  const W = 760, H = 460, left = 78, right = 220, top = 54, bottom = 56;
  const pw = W - left - right, ph = H - top - bottom;
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="80"><text x="10" y="40">${esc(title)}: no data</text></svg>\n`;
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.log2(Math.min(...xs)), x1 = Math.max(Math.log2(Math.max(...xs)), x0 + 1);
  const y0 = Math.floor(Math.log10(Math.min(...ys))), y1 = Math.max(Math.ceil(Math.log10(Math.max(...ys))), y0 + 1);
  const px = (L) => left + ((Math.log2(L) - x0) / (x1 - x0)) * pw;
  const py = (ms) => top + ph - ((Math.log10(ms) - y0) / (y1 - y0)) * ph;
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${left}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`);
  if (subtitle) out.push(`<text x="${left}" y="40" fill="#555">${esc(subtitle)}</text>`);
  // Grid and ticks: every power of two on x, every decade (with 2 and 5 minor lines) on y.
  for (let e = Math.ceil(x0); e <= x1; ++e) {
    const x = px(2 ** e);
    out.push(`<line x1="${x.toFixed(1)}" y1="${top}" x2="${x.toFixed(1)}" y2="${top + ph}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${x.toFixed(1)}" y="${top + ph + 16}" text-anchor="middle">${formatL(2 ** e)}</text>`);
  }
  for (let e = y0; e <= y1; ++e) {
    for (const f of [1, 2, 5]) {
      const v = f * 10 ** e;
      if (Math.log10(v) > y1 + 1e-9) continue;
      const y = py(v);
      out.push(`<line x1="${left}" y1="${y.toFixed(1)}" x2="${left + pw}" y2="${y.toFixed(1)}" stroke="${f === 1 ? '#d0d0d0' : '#f0f0f0'}"/>`);
      if (f === 1) out.push(`<text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${formatMs(+v.toPrecision(3))}</text>`);
    }
  }
  out.push(`<rect x="${left}" y="${top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`);
  out.push(`<text x="${left + pw / 2}" y="${H - 16}" text-anchor="middle">${esc(xLabel)}</text>`);
  out.push(`<text transform="translate(18 ${top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  // Lines and markers.
  series.forEach((s, i) => {
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    if (pts.length) {
      const d = pts.map(([L, ms], j) => `${j ? 'L' : 'M'}${px(L).toFixed(1)},${py(ms).toFixed(1)}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
      for (const [L, ms] of pts) out.push(`<circle cx="${px(L).toFixed(1)}" cy="${py(ms).toFixed(1)}" r="3" fill="${s.color}"><title>${esc(`${s.name}: L = ${L}, ${ms.toPrecision(4)} ms`)}</title></circle>`);
    }
    const ly = top + 10 + i * 20;
    out.push(`<line x1="${left + pw + 14}" y1="${ly}" x2="${left + pw + 42}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
    out.push(`<circle cx="${left + pw + 28}" cy="${ly}" r="3" fill="${s.color}"/>`);
    out.push(`<text x="${left + pw + 48}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
