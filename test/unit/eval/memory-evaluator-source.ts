import type { GoldMention } from '../../../src/eval/gold.ts';
import type { EvaluatorSource } from '../../../src/eval/sidecar/evaluator-service.ts';
import type { LinkedNote } from '../../../src/link/types.ts';

/** An evaluator source held in memory: push() delivers gold or a linked note; commits are counted and reported to `onCommit`. */
export function memoryEvaluatorSource(onCommit: () => void = () => {}) {
  let handlers: Parameters<EvaluatorSource['start']>[0] | undefined;
  const source = {
    commits: 0,
    async start(h: Parameters<EvaluatorSource['start']>[0]) {
      handlers = h;
    },
    async commit() {
      source.commits++;
      onCommit();
    },
    async stop() {},
    push(event: { gold: GoldMention } | { note: LinkedNote }) {
      if ('gold' in event) handlers!.gold(event.gold);
      else handlers!.linkedNote(event.note);
    },
  };
  return source;
}
