import type { Concept } from '../src/kb/concept.ts';
import type { LinkedNote, LinkingCore, NoteInput } from '../src/link/types.ts';
import { LexicalBaseline } from './lexical-baseline.ts';

/** The lexical baseline behind the LinkingCore interface, so it is scored by the same metrics code. */
export class LexicalLinkingCore implements LinkingCore {
  readonly versions = { linkerVersion: 'lexical-baseline', modelVersion: 'char-3-gram-tfidf', indexVersion: 'in-memory' };
  private readonly baseline: LexicalBaseline;
  private readonly concepts: readonly Concept[];

  constructor(concepts: readonly Concept[], normalize: (s: string) => string) {
    this.concepts = concepts;
    this.baseline = new LexicalBaseline(concepts, normalize);
  }

  async linkNotes(notes: NoteInput[]): Promise<LinkedNote[]> {
    return notes.map((note) => ({
      noteId: note.noteId,
      ...this.versions,
      linkedAt: Date.now(),
      mentions: note.mentions.map((m) => {
        const ranked = this.baseline.rank(m.text, 5).map((ci, i) => {
          const c = this.concepts[ci]!;
          return { conceptId: c.id, name: c.name, semanticTypes: c.semanticTypes, score: 1 - i / 10, retrievalScore: 1 - i / 10, exact: false, via: 'lexical-baseline' };
        });
        const best = ranked[0];
        return {
          mentionId: m.id, start: m.start, end: m.end, label: m.label,
          conceptId: best?.conceptId ?? null, conceptName: best?.name ?? null, semanticTypes: best?.semanticTypes ?? [],
          score: best?.score ?? 0, confidence: null, via: best === undefined ? null : 'lexical-baseline', nil: best === undefined, reranked: false, candidates: ranked,
        };
      }),
    }));
  }

  async close(): Promise<void> {}
}
