// Where the pointer is, in CSS pixels from the viewport's corner. For a mouse Chromium reports
// whole pixels, the corner of the pixel under the pointer (315.9 arrives as 315), while what is
// drawn there is sampled at the pixel's centre; where a row or a key is about a pixel wide, the
// corner names the one before it about half the time. A touch it rounds to the nearest pixel.
export const pointerX = (event) => centre(event, event.clientX);
export const pointerY = (event) => centre(event, event.clientY);
const centre = (event, c) => (Number.isInteger(c) && event.pointerType !== 'touch' ? c + 0.5 : c);
