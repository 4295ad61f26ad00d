/**
 * The key of the exact-name table: case, accents, punctuation, possessives and spacing do not
 * distinguish concept names ("Alzheimer's disease" = "alzheimer disease" = "Alzheimer-Disease").
 * Index build and lookup must use the same function, so it lives here and nowhere else.
 */
export function normalizeName(text: string): string {
  return (
    text
      // Before NFKD, which turns an acute accent used as an apostrophe ("Alzheimer´s") into a space.
      .replace(/['’ʼ´`′＇]s\b/giu, '')
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, ' ')
      .trim()
  );
}
