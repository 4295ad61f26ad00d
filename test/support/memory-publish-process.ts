// Publishes a new version of the memory at ROOT with COUNT more labels, in its own process, so a
// test can run it under a file-size limit (`ulimit -f`): the kernel then refuses a write past the
// limit (EFBIG) as it refuses one on a full disk, whoever runs the test. Prints the version made
// current, or the error's code, and exits 0 or 1. Used by test/unit/retrieve/memory-durability.test.ts.
import { publishMemory } from '../../src/link/memory-learner.ts';
import { MemoryStore } from '../../src/retrieve/memory-store.ts';
import { resolveMemoryDir } from '../../src/retrieve/memory-root.ts';
import { TrigramEncoder, lowerNormalize } from './trigram-encoder.ts';

// The limit's signal would kill the process; handled, the write fails with EFBIG instead.
process.on('SIGXFSZ', () => {});
const [root, count] = process.argv.slice(2) as [string, string];
const encoder = new TrigramEncoder();
try {
  const store = MemoryStore.open(resolveMemoryDir(root).dir, lowerNormalize);
  const records = Array.from({ length: Number(count) }, (_, i) => ({ text: `label ${i}`, label: 'Disease', ids: [`T:${i}`], source: 'test', time: 1 }));
  store.add(records, records.map((r) => encoder.vector(r.text)));
  console.log(publishMemory(store, root));
  process.exit(0);
} catch (error) {
  console.log((error as { code?: string }).code ?? String(error));
  process.exit(1);
}
