import type { LinkedNote, LinkingCore, NoteInput } from '../../../src/link/types.ts';

/**
 * A LinkingCore stand-in for tests: answers each mention from a table of mention text (lower
 * case) → ranked concept ids, with scores 0.9, 0.8, …; a mention not in the table is NIL.
 */
export function fakeLinker(table: Record<string, string[]>, versions = { linkerVersion: 'fake', modelVersion: 'fake', indexVersion: 'fake' }): LinkingCore & { calls: number } {
  const core = {
    calls: 0,
    versions,
    async linkNotes(notes: NoteInput[]): Promise<LinkedNote[]> {
      core.calls++;
      return notes.map((note) => ({
        noteId: note.noteId,
        linkerVersion: versions.linkerVersion,
        modelVersion: versions.modelVersion,
        indexVersion: versions.indexVersion,
        linkedAt: 0,
        mentions: note.mentions.map((m) => {
          const ids = table[m.text.toLowerCase()] ?? [];
          const candidates = ids.map((conceptId, i) => ({ conceptId, name: conceptId, semanticTypes: [], score: 0.9 - i / 10, retrievalScore: 0.9 - i / 10, exact: false, via: 'dense' }));
          const best = candidates[0];
          return { mentionId: m.id, start: m.start, end: m.end, label: m.label, conceptId: best?.conceptId ?? null, conceptName: best?.name ?? null, semanticTypes: [], score: best?.score ?? 0, confidence: null, via: best === undefined ? null : 'dense', nil: best === undefined, reranked: false, candidates };
        }),
      }));
    },
    async close() {},
  };
  return core;
}

/** Predictions for test/fixtures/eval/sample.PubTator against mini-kb.jsonl (see offline-eval.test.ts). */
export const SAMPLE_TABLE: Record<string, string[]> = {
  'colon cancer': ['MESH:D003110'],
  'breast cancer': ['MESH:D010051', 'MESH:D001943'],
  anemia: ['MESH:D000743'],
  'breast and ovarian cancer': ['MESH:D010051'],
  'ochronotic arthropathy': ['MESH:D007592'],
  asthma: ['MESH:D001249'],
};
