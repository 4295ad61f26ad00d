import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { CuilinkError } from '../../kb/errors.ts';
import { singleObjectFingerprint } from './single-object.ts';

/** The record kinds cuilink reads and writes, by their schema file in schemas/. */
export const RECORD_KINDS = {
  NoteEvent: 'note-event',
  LinkedNote: 'linked-note',
  GoldMention: 'gold-mention',
  DeadLetter: 'dead-letter',
  ReviewMention: 'review-mention',
  LabelRequest: 'label-request',
} as const;
export type RecordKind = keyof typeof RECORD_KINDS;

/** schemas/ found from this module, so any working directory works. */
export const SCHEMAS_DIR = fileURLToPath(new URL('../../../schemas/', import.meta.url));

export interface WriterSchema {
  kind: RecordKind;
  type: avro.Type;
  /** The schema as written in its file (what is registered with a schema registry). */
  raw: avro.Schema;
  /** Full name, e.g. org.cuilink.NoteEvent. */
  name: string;
  /** Hex SHA-256 of the schema's Avro parsing canonical form (the deprecated `cuilink-schema-fingerprint` header). */
  fingerprint: string;
  /**
   * CRC-64-AVRO ("Rabin") fingerprint of the parsing canonical form, as the 8 little-endian bytes
   * of an Avro single-object header (src/stream/avro/single-object.ts).
   */
  singleObjectFingerprint: Buffer;
  /** Where it came from: `schemas/note-event.avsc` or `schemas/history/note-event.v1.avsc`. */
  file: string;
  current: boolean;
}

function parseSchemaFile(kind: RecordKind, file: string, current: boolean): WriterSchema {
  let type: avro.Type;
  let raw: avro.Schema;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as avro.Schema;
    type = avro.Type.forSchema(raw);
  } catch (error) {
    throw new CuilinkError('SCHEMA_INVALID', `${file}: not a valid Avro schema: ${(error as Error).message}`, { cause: error });
  }
  const name = type.name ?? '';
  if (name.split('.').at(-1) !== kind) throw new CuilinkError('SCHEMA_INVALID', `${file}: record name ${name} is not ${kind}`);
  return { kind, type, raw, name, fingerprint: type.fingerprint('sha256').toString('hex'), singleObjectFingerprint: singleObjectFingerprint(type), file, current };
}

/**
 * The current schema of each kind plus every older writer schema shipped in schemas/history/
 * (`<kind-file>.v<N>.avsc`), indexed by fingerprint: what a reader needs to resolve any record
 * cuilink has ever written.
 */
export class KnownSchemas {
  private readonly currentByKind = new Map<RecordKind, WriterSchema>();
  private readonly byFingerprint = new Map<string, WriterSchema>();
  /** By the hex of the single-object fingerprint bytes. */
  private readonly bySingleObjectFingerprint = new Map<string, WriterSchema>();

  constructor(dir: string = SCHEMAS_DIR) {
    const historyDir = join(dir, 'history');
    let history: string[] = [];
    try {
      history = readdirSync(historyDir).filter((f) => f.endsWith('.avsc'));
    } catch {
      history = [];
    }
    for (const [kind, base] of Object.entries(RECORD_KINDS) as [RecordKind, string][]) {
      const current = parseSchemaFile(kind, join(dir, `${base}.avsc`), true);
      this.currentByKind.set(kind, current);
      this.add(current);
      for (const file of history.filter((f) => f.startsWith(`${base}.v`)).sort()) {
        const older = parseSchemaFile(kind, join(historyDir, file), false);
        if (!this.byFingerprint.has(older.fingerprint)) this.add(older);
      }
    }
  }

  private add(schema: WriterSchema): void {
    this.byFingerprint.set(schema.fingerprint, schema);
    const rabin = schema.singleObjectFingerprint.toString('hex');
    const clash = this.bySingleObjectFingerprint.get(rabin);
    // 64 bits: a clash among a handful of schemas is not expected, but would make records ambiguous.
    if (clash !== undefined) throw new CuilinkError('SCHEMA_INVALID', `${schema.file} and ${clash.file} have the same CRC-64-AVRO fingerprint ${rabin}`);
    this.bySingleObjectFingerprint.set(rabin, schema);
  }

  current(kind: RecordKind): WriterSchema {
    return this.currentByKind.get(kind)!;
  }

  byWriterFingerprint(fingerprint: string): WriterSchema | undefined {
    return this.byFingerprint.get(fingerprint);
  }

  /** The schema whose single-object fingerprint is these 8 bytes (as written after C3 01). */
  bySingleObjectHeader(fingerprint: Buffer): WriterSchema | undefined {
    return this.bySingleObjectFingerprint.get(fingerprint.toString('hex'));
  }

  /** Every schema of `kind`, current first. */
  all(kind: RecordKind): WriterSchema[] {
    return [...this.byFingerprint.values()].filter((s) => s.kind === kind).sort((a, b) => Number(b.current) - Number(a.current));
  }
}

let shared: KnownSchemas | undefined;

/** The schemas in the repository's schemas/ directory, loaded once per process. */
export function knownSchemas(): KnownSchemas {
  shared ??= new KnownSchemas();
  return shared;
}
