import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from '../command.ts';
import { parseFlags, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { normalizeName } from '../../text/normalize.ts';
import { MEMORY_MANIFEST_FILE, readMemoryManifest } from '../../retrieve/memory-manifest.ts';
import { MemoryStore, noteKeyFor } from '../../retrieve/memory-store.ts';
import { resolveMemoryDir } from '../../retrieve/memory-root.ts';
import { publishMemory } from '../../link/memory-learner.ts';

/** A staging directory older than this belongs to a save that died (a save takes seconds). */
const ABANDONED_STAGING_MS = 10 * 60_000;

const usage = `Usage: cuilink memory erase --memory ROOT (--note-id ID[,ID…] | --note-ids FILE)

Erases every label learned from these notes (a patient's erasure request): a new version without
their records becomes CURRENT (running linkers swap to it), every older version directory that
still holds one of them is deleted (so no rollback can bring the text back), and the notes are
remembered by SHA-256 in the memory's manifest so that 'cuilink memory updater', which replays the
gold topic, never learns them again (a running updater takes the erasure in before its next
snapshot). Prints counts only. A memory without raw text (memory add --no-raw-text) holds note ids
as keyed hashes only: erase hashes the given ids with each version's salt and matches those.

Options:
  --memory ROOT          memory root (version directories + CURRENT)
  --note-id ID[,ID…]     note ids to erase
  --note-ids FILE        a file of note ids, one per line
  -h, --help             this text`;

export const memoryErase: Command = {
  name: 'memory erase',
  summary: "Erase every label of given notes from a memory, its older versions included (a patient's erasure)",
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, { memory: { type: 'string' }, 'note-id': { type: 'string' }, 'note-ids': { type: 'string' } });
    const root = requireString(values.memory, 'memory');
    if ((values['note-id'] === undefined) === (values['note-ids'] === undefined)) throw new InputError('give exactly one of --note-id or --note-ids', 'BAD_FLAGS');
    const noteIds = new Set((values['note-id'] ?? readNoteIds(values['note-ids']!)).split(/[,\n]/).map((s) => s.trim()).filter((s) => s !== ''));
    if (noteIds.size === 0) throw new InputError('no note id given', 'BAD_FLAGS');
    const resolved = resolveMemoryDir(root);
    if (resolved.root === undefined) throw new InputError(`${root}: erase needs a memory root (with CURRENT), not a version directory`, 'BAD_FLAGS');
    // The older versions that hold the notes are found first: a version that cannot be read
    // stops the erasure before anything changes, naming its file.
    const holding = readdirSync(root).filter((name) => !name.startsWith('.') && versionHolds(join(root, name), noteIds));
    const store = MemoryStore.open(resolved.dir, normalizeName);
    const removed = store.erase(noteIds);
    const version = publishMemory(store, root);
    for (const name of holding) if (name !== version) rmSync(join(root, name), { recursive: true, force: true });
    const purged = holding.filter((name) => name !== version).length;
    // A save that crashed leaves its staging directory, records included (maybe without a manifest
    // to say whose): any older than a save takes is removed.
    const abandoned = readdirSync(root).filter((name) => name.startsWith('.building-') && Date.now() - statSync(join(root, name)).mtimeMs > ABANDONED_STAGING_MS);
    for (const name of abandoned) rmSync(join(root, name), { recursive: true, force: true });
    console.log(`erased ${noteIds.size} note(s): ${removed.length} label(s) removed; ${purged} older version(s) holding them deleted${abandoned.length > 0 ? `; ${abandoned.length} abandoned staging director${abandoned.length === 1 ? 'y' : 'ies'} deleted` : ''}; CURRENT = ${version}`);
    return 0;
  },
};

/**
 * Whether a version directory's records hold a label of these notes; false for what is no version
 * (CURRENT, a stray file). Records of a memory without raw text name their note by its keyed hash
 * (`noteHash`, under the version's salt): the ids are hashed the same way and matched.
 */
function versionHolds(dir: string, noteIds: ReadonlySet<string>): boolean {
  // Only what has no manifest is no version: a version whose manifest cannot be read may still
  // hold the notes' records, and skipping it would leave them behind after "erased".
  if (!existsSync(join(dir, MEMORY_MANIFEST_FILE))) return false;
  let manifest;
  try {
    manifest = readMemoryManifest(dir);
  } catch (error) {
    throw new InputError(`${(error as Error).message}; nothing erased (repair or remove that version first)`, 'BAD_MEMORY', error);
  }
  const file = join(dir, manifest.files.records);
  const field = manifest.rawText ? 'noteId' : 'noteHash';
  const wanted = manifest.rawText ? noteIds : new Set([...noteIds].map((id) => noteKeyFor(manifest, id)));
  return readFileSync(file, 'utf8').split('\n').some((line, i) => {
    if (line === '') return false;
    try {
      const value = (JSON.parse(line) as Record<string, unknown>)[field];
      return typeof value === 'string' && wanted.has(value);
    } catch {
      throw new InputError(`${file}:${i + 1}: not a memory record; nothing erased (repair or remove that version first)`, 'BAD_MEMORY');
    }
  });
}

function readNoteIds(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`--note-ids: cannot read ${file}: ${(error as Error).message}`, 'BAD_FLAGS', error);
  }
}
