// The long-text view's model and how many characters it may generate, shared by the view
// (long-view.js), the settings and their URL (settings.js) and the compute worker (model-view.js).
export const LONG_MODEL = 'long-performer';
export const LONG_LIMITS = { min: 64, max: 16384, default: 2000 };
