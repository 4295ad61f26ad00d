/** A 31-bit LCG: the generator the shipped distilled reranker's pairs were drawn with (bench/distill-pairs.ts), so that they reproduce. */
export function lcg(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
}

/** A KB name as a mention: reading order for inverted names, a dropped word, a plural, lower case. */
export function mentionForm(text: string, rand: () => number): string {
  const inverted = /^([^,]+), ([^,]+)$/.exec(text);
  if (rand() < 0.6 && inverted) text = `${inverted[2]} ${inverted[1]}`;
  const words = text.split(' ');
  if (words.length >= 3 && rand() < 0.25) {
    words.splice(Math.floor(rand() * words.length), 1);
    text = words.join(' ');
  }
  if (rand() < 0.1 && /[a-z]$/.test(text) && !text.endsWith('s')) text += 's';
  return rand() < 0.5 ? text.toLowerCase() : text;
}
