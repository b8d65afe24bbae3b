// Characters of the model's text as the panels print them, and text put into HTML.

// A space as ␣ and a newline as ⏎, so that a single character is visible; others as they are.
export const shownChar = (c) => (c === ' ' ? '␣' : c === '\n' ? '⏎' : c);

// Text safe inside an element's HTML (not an attribute's).
export const escapeHtml = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
