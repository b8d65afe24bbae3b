// The line under the heatmaps that reads the hovered entry (i, j): A, Â, their difference, the
// characters of a trained model's query and key, and a key's codeword in codebook modes.
import { fmt } from './colors.js';
import { escapeHtml } from './text.js';

export const READOUT_HINT = 'Hover a heatmap (or focus one and use the arrow keys) to read (i, j), A, Â and the error; click to inspect a row.';
// Where nothing hovers (a phone), a tap does both.
export const TOUCH_HINT = 'Tap a heatmap to read (i, j), A, Â and the error there and to inspect its row.';
const touch = () => typeof matchMedia === 'function' && matchMedia('(hover: none)').matches;

const code = (c) => (c === undefined ? '' : escapeHtml(JSON.stringify(c).slice(1, -1)));

// HTML for the entry h = [i, j] (or null) of `view` ({ L, causal, A, Ahat }); `codebook` is the
// computation's ({ view: { assign }, assignment }) or absent, `chars` the model's text or absent.
export function readoutHtml(view, h, { codebook, chars } = {}) {
  if (!h) return touch() ? TOUCH_HINT : READOUT_HINT;
  const [i, j] = h;
  if (view.causal && j > i) return `(i, j) = (<b>${i}</b>, <b>${j}</b>): masked (causal: key j > query i)`;
  const a = view.A[i * view.L + j], b = view.Ahat[i * view.L + j], e = a - b;
  // The error relative to A, as a ratio where it is over 10 times A (a key of weight 10⁻³⁰ that
  // Â gives 10⁻¹¹ is not well read as 10²¹ %).
  const rel = !(a > 0) ? '' : Math.abs(e) <= 10 * a ? ` (${fmt((100 * e) / a, 2)} % of A)` : b > 0 ? ` (Â = ${fmt(b / a, 2)} × A)` : '';
  const word = codebook && j < codebook.view.assign.length
    ? ` &nbsp; key ${j} → codeword ${codebook.view.assign[j]}${codebook.assignment === 'hard' ? '' : ' (nearest)'}` : '';
  const text = chars ? ` &nbsp; query <code>${code(chars[i])}</code> → key <code>${code(chars[j])}</code>` : '';
  return `(i, j) = (<b>${i}</b>, <b>${j}</b>)${text} &nbsp; A = <b>${fmt(a)}</b> &nbsp; Â = <b>${fmt(b)}</b>` +
    `${b <= 0 ? ' <span class="err-pos">(≤ 0)</span>' : ''} &nbsp; A − Â = <b class="${e >= 0 ? 'err-pos' : 'err-neg'}">${fmt(e)}</b>${rel}${word}`;
}
