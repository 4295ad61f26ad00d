/**
 * Label Studio's Text tag counts a span's offsets in Unicode code points; cuilink (JavaScript)
 * counts UTF-16 units. They differ after any character outside the Basic Multilingual Plane (an
 * emoji, 𝛽): each one before the span shifts it by one.
 */

/** The code-point offset of the UTF-16 offset `utf16` in `text`. */
export function toCodePointOffset(text: string, utf16: number): number {
  return Array.from(text.slice(0, utf16)).length;
}

/** The UTF-16 offset of the code-point offset `points` in `text`; undefined past its end. */
export function fromCodePointOffset(text: string, points: number): number | undefined {
  let i = 0;
  for (let p = 0; p < points; p++) {
    if (i >= text.length) return undefined;
    const cp = text.codePointAt(i)!;
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}
