/**
 * The key of the exact-name table: case, accents, punctuation, possessives and spacing do not
 * distinguish concept names ("Alzheimer's disease" = "alzheimer disease" = "Alzheimer-Disease").
 * Index build and lookup must use the same function, so it lives here and nowhere else.
 */
export function normalizeName(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/['’]s\b/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}
