import type { Concept } from './concept.ts';
import { ParseError } from './errors.ts';
import { conceptFromJsonLine } from './jsonl-format.ts';
import { readLines } from './line-reader.ts';

/** Streams concepts from a concept JSONL file (docs/kb-jsonl.md); blank lines are skipped. */
export async function* readConceptJsonl(path: string): AsyncGenerator<Concept> {
  for await (const line of readLines(path)) {
    if (line.text.trim().length === 0) continue;
    const parsed = conceptFromJsonLine(line.text);
    if (typeof parsed === 'string') throw new ParseError(path, line.number, parsed);
    yield parsed;
  }
}
