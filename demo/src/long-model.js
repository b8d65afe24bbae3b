// The long-text view's model and how many characters it may generate, shared by the view
// (long-view.js), its notes (long-notes.js), the settings and their URL (settings.js) and the
// compute worker (compute-worker.js).
export const LONG_MODEL = 'long-performer';
export const LONG_LIMITS = { min: 64, max: 16384, default: 2000 };
// What FAVOR+'s state may see: 0 the whole prefix, or a sliding window of that many positions.
export const LONG_WINDOWS = [0, 256];
