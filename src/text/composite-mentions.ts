/**
 * Distributed readings of a coordinated mention: "breast and ovarian cancer" → "breast cancer",
 * "ovarian cancer"; "X- and Y-linked disease" → "X-linked disease", "Y-linked disease";
 * "Duchenne/Becker muscular dystrophy" → "Duchenne muscular dystrophy", … (every shared head of
 * one and two words is tried; the caller keeps the readings the KB knows). Empty when the
 * mention is no coordination.
 */
const CONJUNCTION = /\s*(?:,\s*(?:and|or)\s+|\s+and\/or\s+|\s+and\s+|\s+or\s+|\s*\/\s*|,\s*)/i;

export function compositeReadings(text: string): string[] {
  // A comma alone is an apposition or an aside ("bacterial, especially neisserial, infections").
  if (!/\b(and|or)\b|\//i.test(text)) return [];
  const parts = text.split(CONJUNCTION).map((p) => p.trim()).filter((p) => p.length > 0);
  if (parts.length < 2 || parts.length > 5) return [];
  const last = parts[parts.length - 1]!;
  const lastWords = last.split(/\s+/);
  const readings = new Set<string>();
  for (const part of parts.slice(0, -1)) {
    if (part.endsWith('-')) {
      // "X- and Y-linked": the hyphen marks the shared suffix of the last conjunct.
      const suffix = last.slice(last.indexOf('-'));
      if (last.includes('-')) readings.add(`${part.slice(0, -1)}${suffix}`);
      continue;
    }
    for (let k = 1; k <= 2 && k < lastWords.length; k++) readings.add(`${part} ${lastWords.slice(-k).join(' ')}`);
    readings.add(part);
  }
  readings.add(last);
  readings.delete(text);
  return [...readings];
}
