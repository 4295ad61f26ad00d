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
      .replace(SIGN_PLUS, ' plus ')
      .replace(SIGN_MINUS, ' minus ')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, ' ')
      .trim()
  );
}

/**
 * A sign is part of the name, not punctuation: "EZB-MYC+ DLBCL" and "EZB-MYC- DLBCL",
 * "(+)ssRNA virus infection" and "(-)ssRNA virus infection" are different concepts, and "DOA+"
 * is "DOA plus" (a syndrome), not "DOA". (NFKD has already turned a full-width plus into "+".)
 */
const SIGN_PLUS = /\+/gu;
/**
 * A minus closes a word ("G6PD A-", "18q- syndrome", "(-)", "+/-"); a hyphen joins two ("X-linked"). The
 * hyphen a shared word-end leaves before "and"/"or"/"to" or a comma ("D-2- and L-2-hydroxyglutaric
 * aciduria") is still only a hyphen.
 */
const SIGN_MINUS = /(?<=[\p{L}\p{N}(/])[-‐−](?![\p{L}\p{N}])(?!\s*(?:(?:and|or|to)\b|[,&]))/giu;
