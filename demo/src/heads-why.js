// Model mode, beside the row inspector: every head's mean row KL(A‖Â) against what its error
// follows. An approximation gets the ratio of two keys' weights in a row wrong by a factor; the
// variance of its logarithm over the keys a query sees is what sets the grid's colours, more than
// how sharp a head is (docs/models.md):
// - positive, hyperbolic and OPRF features: ‖k̃ⱼ − k̃ₗ‖² for each feature, so σ²ₖ, the spread
//   of the keys a query sees (model/layers.js causalKeySpread); Performer as soft VQ is positive
//   features;
// - hard and soft VQ: q̃ᵢ·(r̃ⱼ − r̃ₗ), r = c̄ − k a key's residual from what stands in for it (its
//   nearest codeword, or the mean of the codewords weighted by its responsibilities), so
//   σ²ᵣ = ‖q̃‖²D/d, its variance were r to point anywhere, D = mean ‖r̃‖² (model-view.js codewordMiss);
// - SDERF: its own second-order prediction of the KL, KL₂ (dense-variance.js), as its features
//   weigh each direction of q̃ + k̃ differently;
// - ADERF: σ²ₖ of its rebalanced keys Ψ⁻ᵀk̃, the rows its OPRF features see (dense-variance.js).
// Clicking a point inspects its head, as a click in the grid does.
import { fmt } from './colors.js';
import { frameColor } from './model-panel.js';
import { drawPlot } from './plot.js';

// Ranks of xs (ties share their mean rank).
function ranks(xs) {
  const order = xs.map((x, i) => [x, i]).sort((a, b) => a[0] - b[0]);
  const r = new Array(xs.length);
  for (let a = 0; a < order.length;) {
    let b = a;
    while (b + 1 < order.length && order[b + 1][0] === order[a][0]) b++;
    for (let c = a; c <= b; c++) r[order[c][1]] = (a + b) / 2;
    a = b + 1;
  }
  return r;
}

// Spearman's rank correlation: 1 when ys rise wherever xs do; NaN with fewer than 3 points or
// when either does not vary.
export function rankCorrelation(xs, ys) {
  const n = xs.length;
  if (n < 3 || ys.length !== n) return NaN;
  const rx = ranks(xs), ry = ranks(ys), mean = (n - 1) / 2;
  let sxy = 0, sxx = 0, syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) ** 2;
    syy += (ry[i] - mean) ** 2;
  }
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : NaN;
}

const errorOf = (o) => o.errors.meanRowKL;

// Hard and soft VQ plot the same quantity, each with its own account of c̄.
const CODEWORDS_MISS = { value: (o) => o.residual, symbol: 'σ²ᵣ', axis: 'codewords\' miss σ²ᵣ' };

export const MEASURES = {
  predicted: {
    value: (o) => o.predicted, symbol: 'KL₂', axis: 'second-order KL₂, iid features',
    what: 'KL₂: the mean row KL that SDERF\'s own variance predicts to second order for m iid features, half the variance, ' +
      'over a row\'s exact weights, of the relative errors of its keys\' estimated weights (for a typical row: the geometric ' +
      'mean over 8 rows). The keys\' spread σ²ₖ ranks SDERF\'s error loosely, as its features weigh each direction of ' +
      'q̃ + k̃ by a coefficient of its own',
  },
  rebalanced: {
    value: (o) => o.rebalanced, symbol: 'σ²ₖ′', axis: 'rebalanced keys\' spread σ²ₖ′',
    what: 'σ²ₖ′: how far apart the keys its queries see lie as ADERF\'s features see them (mean ‖Ψ⁻ᵀ(k̃ⱼ − k̄)‖², k̃ = k/∜d, ' +
      'Ψ fitted to the head so that Ψq̃ and Ψ⁻ᵀk̃ have equal second moments). Each random feature misjudges the ratio of two ' +
      'keys\' weights by a factor of log-variance ‖Ψ⁻ᵀ(k̃ⱼ − k̃ₗ)‖², as OPRF\'s does with ‖k̃ⱼ − k̃ₗ‖²',
  },
  spread: {
    value: (o) => o.spread, symbol: 'σ²ₖ', axis: 'keys\' spread σ²ₖ',
    what: 'σ²ₖ: how far apart the keys its queries see lie (mean ‖k̃ⱼ − k̄‖², k̃ = k/∜d). Each random feature misjudges the ratio ' +
      'of two keys\' weights by a factor of log-variance ‖k̃ⱼ − k̃ₗ‖²',
  },
  residual: {
    ...CODEWORDS_MISS,
    what: 'σ²ᵣ = ‖q̃‖²D/d: D the mean ‖c̃ − k̃‖² from each key to its codeword (k-means\' distortion), ‖q̃‖² the queries\' ' +
      '(x̃ = x/∜d). Putting a key\'s codeword in its place changes the logarithm of its weight by q̃·(c̃ − k̃), of variance ' +
      'σ²ᵣ were c̃ − k̃ to point anywhere',
  },
  softResidual: {
    ...CODEWORDS_MISS,
    what: 'σ²ᵣ = ‖q̃‖²D/d: D the mean ‖c̄ − k̃‖² from each key to c̄, the codewords\' mean weighted by its responsibilities, ' +
      '‖q̃‖² the queries\' (x̃ = x/∜d). Putting them in a key\'s place changes the logarithm of its weight by q̃·(c̄ − k̃), of ' +
      'variance σ²ᵣ were c̄ − k̃ to point anywhere, and by a term ≥ 0 from their spread around c̄',
  },
};

// What the plot shows for the kernel, or null where neither measure is what the error follows:
// σ²ₖ for the features of Gaussian w its account is of: positive and hyperbolic, Performer as soft
// VQ (positive features), and OPRF, whose fitted A leaves each feature's factor as it is (the
// query weighs w by e^{2A‖w‖² + Bwᵀq̃}, under which w has variance 1/(1 − 4A), and B² = 1 − 4A).
// σ²ₖ ranks SDERF's error loosely (0.71 over the 80 heads at the defaults, OPRF 0.90): KL₂, its
// own variance to second order (dense-variance.js), ranks it at 0.88. ADERF is OPRF of rebalanced
// rows: the spread of its rebalanced keys, σ²ₖ′, ranks it at 0.91 (σ²ₖ 0.84; KL₂ in its own
// coordinates 0.87, and overshoots it by orders of magnitude). Not trigonometric and relu
// features, which are not positive estimates of e^{q̃·k̃}. σ²ᵣ for soft VQ, and for hard VQ with
// fewer codewords than keys (with as many, Â = A).
const SPREAD_KERNELS = ['positive', 'hyperbolic', 'performer-vq', 'oprf'];
const FITTED_KERNELS = { sderf: 'predicted', aderf: 'rebalanced' };
const RESIDUAL_KERNELS = { vq: 'residual', 'soft-vq': 'softResidual' };
export function measureOf(kernel, overview) {
  if (FITTED_KERNELS[kernel]) {
    const measure = MEASURES[FITTED_KERNELS[kernel]];
    return overview.length && overview.every((o) => measure.value(o) > 0 && Number.isFinite(measure.value(o))) ? measure : null;
  }
  if (RESIDUAL_KERNELS[kernel])
    return overview.length && overview.every((o) => Number.isFinite(o.residual)) ? MEASURES[RESIDUAL_KERNELS[kernel]] : null;
  return SPREAD_KERNELS.includes(kernel) ? MEASURES.spread : null;
}

// The sentence under the plot, from the heads it shows; with σ²ₖ on a rotary model (heads with
// `unrotated`, their keys' spread before the rotation), how much of it the rotation makes.
export function headsWhyNote(overview, measure = MEASURES.spread) {
  const r = rankCorrelation(overview.map(measure.value), overview.map(errorOf));
  const mean = (f) => overview.reduce((a, o) => a + f(o), 0) / overview.length;
  const rotary = measure === MEASURES.spread && overview.length && overview.every((o) => Number.isFinite(o.unrotated))
    ? ` Rotary positions turn each key by its position: with the turn undone, the keys' spread is ${fmt(mean((o) => o.unrotated), 2)} ` +
      `on average over these heads, against ${fmt(mean((o) => o.spread), 2)} as attention sees them.` : '';
  return `Each point a head, coloured as its frame; ◯ the inspected one. ${measure.what}` +
    (Number.isFinite(r) ? `; over these ${overview.length} heads, ${measure.symbol} and the error ${rankWords(r)} (Spearman).` : '.') + rotary;
}

// What a rank correlation says, in words that fit its sign and size (a typed text can leave the
// measure unrelated to the error, or ranked the other way round).
export function rankWords(r) {
  const value = r.toFixed(2).replace(/^-/, '−');
  if (r >= 0.6) return `rank alike at ${value}`;
  if (r >= 0.3) return `rank only loosely alike at ${value}`;
  if (r > -0.3) return `hardly rank alike here: ${value}`;
  return `rank in opposite orders here: ${value}`;
}

// Tick labels of σ²ₖ and σ²ᵣ (about 0.001 to 100): 0.5, 2, 20 rather than 2·10¹.
const plain = (v) => String(v >= 1 ? Math.round(v) : Number(v.toPrecision(1)));

// Margins of the axes' ranges: room for the inspected head's ring at either end.
const PAD = 0.1;

export class HeadsWhy {
  constructor(svg, note, onSelect) {
    this.svg = svg;
    this.note = note;
    // a point is a few px across: a click or tap within a fingertip of one (14 px) takes the nearest
    svg.addEventListener('click', (e) => {
      let point = e.target.closest?.('[data-key]');
      if (!point) {
        let best = 14;
        for (const p of svg.querySelectorAll('[data-key]')) {
          const r = p.getBoundingClientRect(), d = Math.hypot(r.left + r.width / 2 - e.clientX, r.top + r.height / 2 - e.clientY);
          if (d < best) [best, point] = [d, p];
        }
      }
      const key = point?.getAttribute('data-key');
      if (!key) return;
      const [layer, head] = key.split(' ').map(Number);
      onSelect(layer, head);
    });
  }

  draw(overview, { layer, head }, measure) {
    // a redraw for another row or the hover keeps the same heads, measure and selection
    const key = [overview, measure, layer, head];
    if (this.drawn?.every((v, n) => v === key[n])) return;
    this.drawn = key;
    const x = measure.value;
    const point = (o) => [x(o), errorOf(o), `layer ${o.layer}, head ${o.head}: ${measure.symbol} ${fmt(x(o))}, mean row KL ${fmt(errorOf(o))}; click to inspect it`, `${o.layer} ${o.head}`];
    const selected = overview.filter((o) => o.layer === layer && o.head === head);
    drawPlot(this.svg, {
      x: { log: true, label: measure.axis, pad: PAD, format: plain },
      y: { log: true, label: 'mean row KL(A‖Â)', pad: PAD },
      margin: { l: 44, r: 8 },
      series: [
        ...overview.map((o) => ({ label: `L${o.layer} H${o.head}`, color: frameColor(errorOf(o)), marker: 'circle', points: [point(o)] })),
        { label: 'inspected', color: '#111', marker: 'ring', points: selected.map(point) },
      ],
      empty: 'no head to show',
    });
    this.note.textContent = headsWhyNote(overview, measure);
    this.svg.setAttribute('aria-label', `every head's mean row KL(A‖Â) against the ${measure.axis}`);
  }
}
