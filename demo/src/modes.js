// The kernels and codebook modes the page offers, shared by the page and its workers.
export const FEATURE_KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];
// The codebook modes (Transformer-VQ) share the kernel menu; their assignment of keys to codewords.
export const CODEBOOK_MODES = { vq: 'hard', 'soft-vq': 'soft', 'performer-vq': 'gaussian' };
export const KERNELS = [...FEATURE_KERNELS, ...Object.keys(CODEBOOK_MODES)];
export const STUDY_KERNELS = [...FEATURE_KERNELS, 'vq', 'soft-vq'];  // Performer as soft VQ is positive, orthogonal-fixed
export const MODE_NAMES = { vq: 'hard VQ', 'soft-vq': 'soft VQ', 'performer-vq': 'Performer as soft VQ' };
export const isCodebook = (kernel) => kernel in CODEBOOK_MODES;
export const SAMPLINGS = ['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured'];
// The temperature of soft VQ, with two significant digits, as shown and in the URL.
export const fmtT = (t) => String(Number(t.toPrecision(2)));
// On a log slider: T = 10^(n/10).
export const temperatureOf = (n) => Number(fmtT(10 ** (n / 10)));

// A Performer's exported W (its last training draw: positive, orthogonal, m = 64) stands in for
// random features when its box is ticked and the kernel is the one it was trained with; the other
// kernels, and Performer as soft VQ (fixed-norm rows), draw their own W.
export const EXPORTED_W = { kernel: 'positive', sampling: 'orthogonal', m: 64 };
export const usesExportedW = (p, hasExported) => p.pattern === 'model' && p.trainedW && hasExported && p.kernel === EXPORTED_W.kernel;
