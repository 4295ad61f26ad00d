import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { KnownSchemas, RECORD_KINDS, type RecordKind } from '../../../src/stream/avro/index.ts';

test('docs/stream-formats.md lists both fingerprints (CRC-64-AVRO, SHA-256) of every shipped schema, and only those', () => {
  const doc = readFileSync('docs/stream-formats.md', 'utf8');
  const listed = new Map([...doc.matchAll(/^\| `(schemas\/[^`]+)` \| [^|]+ \| [^|]+ \| `([0-9a-f]{16})` \| `([0-9a-f]{64})` \|$/gm)].map((m) => [m[1]!, `${m[2]!} ${m[3]!}`]));
  const schemas = new KnownSchemas();
  const shipped = new Map(
    (Object.keys(RECORD_KINDS) as RecordKind[])
      .flatMap((kind) => schemas.all(kind))
      .map((s) => [`schemas/${s.file.split('schemas/').at(-1)}`, `${s.singleObjectFingerprint.toString('hex')} ${s.fingerprint}`]),
  );
  assert.deepEqual(Object.fromEntries([...listed].sort()), Object.fromEntries([...shipped].sort()));
});
