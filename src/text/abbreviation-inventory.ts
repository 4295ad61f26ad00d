import { existsSync, readFileSync } from 'node:fs';
import { InputError } from '../kb/errors.ts';

/**
 * Senses of clinical short forms defined nowhere in the note ("DM" → "diabetes mellitus"), from
 * the small derived inventory shipped in models/default/abbreviations (CC BY 4.0; see its header
 * and scripts/data/derive-clinical-abbreviations.mjs). The linker offers the concepts named by
 * these senses as extra candidates for the reranker to weigh, never as a blind replacement.
 */
export class AbbreviationInventory {
  private readonly senses = new Map<string, string[]>();

  constructor(rows: Iterable<{ shortForm: string; sense: string }>) {
    for (const { shortForm, sense } of rows) {
      const key = shortForm.toLowerCase();
      const list = this.senses.get(key);
      if (list) list.push(sense);
      else this.senses.set(key, [sense]);
    }
  }

  /** Reads `sf<TAB>sense<TAB>frequency` rows (most frequent sense first per short form; `#` comments). */
  static load(file: string): AbbreviationInventory {
    if (!existsSync(file)) throw new InputError(`${file}: abbreviation inventory not found`, 'BAD_FILE');
    const rows: { shortForm: string; sense: string }[] = [];
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.startsWith('#') || line.trim() === '') continue;
      const [shortForm, sense] = line.split('\t');
      if (shortForm && sense) rows.push({ shortForm, sense });
    }
    return new AbbreviationInventory(rows);
  }

  /** Senses of a short form, most frequent first; empty when unknown. */
  lookup(shortForm: string): readonly string[] {
    return this.senses.get(shortForm.toLowerCase()) ?? [];
  }

  get size(): number {
    return this.senses.size;
  }
}
