// What the settings form shows that depends on the kernel menu and the input: the sampling mode
// (not used by k-means codebooks, fixed to orthogonal-fixed for Performer as soft VQ), the
// temperature (soft VQ only), the meaning of m and its cap at L, and which "What is drawn" text
// applies. Pure, so that each mode's form is checked in Node; main.js writes it into the page.
import { fmtT, isCodebook, temperatureOf } from './modes.js';

export function modeControls(state) {
  const mode = state.kernel;
  const codebook = isCodebook(mode);
  const capped = codebook && mode !== 'performer-vq' && state.m > state.L;
  return {
    sampling: { disabled: codebook, value: mode === 'performer-vq' ? 'orthogonal-fixed' : state.sampling },
    samplingNote: mode === 'performer-vq'
      ? 'Fixed: with every ‖ω‖ = √d, FAVOR+ is exactly this codebook attention.'
      : codebook ? 'Not used: k-means codebook of the keys (seed: the feature seed).' : null,
    temperature: { shown: mode === 'soft-vq', step: state.tempStep, text: fmtT(temperatureOf(state.tempStep)) },
    mLabel: codebook ? 'codewords m' : 'features m',
    mNote: capped ? `m = ${state.m} > L: k-means uses m = L = ${state.L} codewords (at most one per key).` : null,
    about: state.pattern === 'model' ? 'model' : codebook ? 'vq' : 'features',
  };
}
