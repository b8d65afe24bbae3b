// Where the pointer is, in CSS pixels from the viewport's corner. Chromium reports whole pixels,
// the corner of the pixel under the pointer, while what is drawn there is sampled at the pixel's
// centre; where a row or a key is about a pixel wide, the corner names the one before it about
// half the time.
export const pointerX = (event) => centre(event.clientX);
export const pointerY = (event) => centre(event.clientY);
const centre = (c) => (Number.isInteger(c) ? c + 0.5 : c);
