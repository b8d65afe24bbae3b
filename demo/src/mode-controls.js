// What the settings form shows that depends on the kernel menu and the input: the sampling mode
// (not used by k-means codebooks, fixed to orthogonal-fixed for Performer as soft VQ), the
// Performer's exported W (for the positive kernel only; while it is used, the sampling, m and
// the feature seed are not), the temperature (soft VQ only), the meaning of m and its cap at L,
// which "What is drawn" text applies, and the FAVOR+ the speed study times (the m and sampling
// the form shows, or FAVOR+'s defaults where m counts k-means codewords). Pure, so that each mode's form is checked in Node;
// main.js writes it into the page.
import { EXPORTED_W, fmtT, isCodebook, temperatureOf, usesExportedW } from './modes.js';
import { DEFAULTS } from './settings.js';

// hasExported: the chosen model is a Performer with an exported W (from the manifest).
export function modeControls(state, { hasExported = false } = {}) {
  const mode = state.kernel;
  const codebook = isCodebook(mode);
  const capped = codebook && mode !== 'performer-vq' && state.m > state.L;
  const exported = usesExportedW(state, hasExported);
  const sampling = { disabled: codebook || exported, value: mode === 'performer-vq' ? 'orthogonal-fixed' : exported ? EXPORTED_W.sampling : state.sampling };
  const features = { disabled: exported, m: exported ? EXPORTED_W.m : state.m };
  return {
    trainedW: {
      // a model with no exported W shows the box off: ticked, it would say Â uses one
      checked: hasExported && state.trainedW,
      disabled: !hasExported || mode !== EXPORTED_W.kernel,
      note: hasExported && state.trainedW && mode !== EXPORTED_W.kernel ? 'Not used: the exported W is for the positive kernel, the one the model was trained with.' : null,
    },
    sampling,
    samplingNote: mode === 'performer-vq'
      ? 'Fixed: with every ‖ω‖ = √d, FAVOR+ is exactly this codebook attention.'
      : codebook ? 'Not used: k-means codebook of the keys (seed: the feature seed).'
        : exported ? `Not used, nor m and the feature seed: the model's exported W is its last training draw (${EXPORTED_W.sampling}, m = ${EXPORTED_W.m}); untick it above to draw features here.` : null,
    // while the exported W is used, the m it has (the slider keeps the m it would draw)
    features,
    temperature: { shown: mode === 'soft-vq', step: state.tempStep, text: fmtT(temperatureOf(state.tempStep)) },
    mLabel: codebook ? 'codewords m' : 'features m',
    mNote: capped ? `m = ${state.m} > L: k-means uses m = L = ${state.L} codewords (at most one per key).` : null,
    about: state.pattern === 'model' ? 'model' : codebook ? 'vq' : 'features',
    speed: codebook && mode !== 'performer-vq' ? { m: DEFAULTS.m, sampling: DEFAULTS.sampling, kmeans: true }
      : { m: features.m, sampling: sampling.value, kmeans: false },
  };
}
