import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { AvroStageCodec, ConfluentAvroCodec, noteInputToNoteEvent, type SchemaRegistryOptions } from '../../../src/stream/avro/index.ts';
import { startSchemaRegistryStandIn } from '../../support/schema-registry-stand-in.ts';

// The registry client against the in-process stand-in (test/support/schema-registry-stand-in.ts)
// behind basic or bearer auth and over https with a self-signed certificate.

const note = noteInputToNoteEvent({ noteId: 'n-1', text: 'Fever.', mentions: [{ id: '0-5', start: 0, end: 5, text: 'Fever', label: 'Disease', score: 0.5 }] }, 1000);

async function rejectsOneLine(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof CuilinkError, String(error));
    assert.equal(error.code, 'REGISTRY_UNAVAILABLE');
    assert.equal(error.retriable, true, 'the stage holds its input rather than dead-lettering it');
    assert.doesNotMatch(error.message, /\n/);
    assert.match(error.message, pattern);
    return true;
  });
}

test('basic auth: the codec registers under <topic>-value with credentials; without them, or with a wrong password, a one-line 401 error', async () => {
  const registry = await startSchemaRegistryStandIn({ basic: { username: 'cuilink', password: 's3cret' } });
  try {
    const codec = new ConfluentAvroCodec({ url: registry.url, auth: { basic: { username: 'cuilink', password: 's3cret' } } });
    const encoded = await codec.encode('NoteEvent', note, 'cuilink.notes');
    assert.equal(encoded.value[0], 0);
    assert.deepEqual([...registry.subjects.keys()], ['cuilink.notes-value']);
    assert.equal((await codec.decode('NoteEvent', encoded.value, {})).noteId, 'n-1');
    assert.deepEqual(registry.refused, []);

    await rejectsOneLine(new ConfluentAvroCodec({ url: registry.url }).encode('NoteEvent', note, 'cuilink.notes'), /^schema registry: registering org\.cuilink\.NoteEvent under subject cuilink\.notes-value: 401 Unauthorized: check schemaRegistry\.auth/);
    await rejectsOneLine(new ConfluentAvroCodec({ url: registry.url, auth: { basic: { username: 'cuilink', password: 'wrong' } } }).decode('NoteEvent', encoded.value, {}), /fetching schema id 1: 401 Unauthorized/);
    assert.ok(registry.refused.length >= 2);
  } finally {
    await registry.close();
  }
});

test('bearer auth: Authorization: Bearer <token> on every request; none is a one-line 401 error', async () => {
  const registry = await startSchemaRegistryStandIn({ bearer: 'tok-123' });
  try {
    const raw = new ConfluentAvroCodec({ url: registry.url, auth: { bearer: { token: 'tok-123' } } });
    await raw.encode('NoteEvent', note, 'cuilink.notes');
    assert.ok(registry.subjects.has('cuilink.notes-value'));
    await rejectsOneLine(new ConfluentAvroCodec({ url: registry.url }).encode('NoteEvent', note, 'cuilink.notes'), /401 Unauthorized/);
    await rejectsOneLine(new ConfluentAvroCodec({ url: registry.url, auth: { bearer: { token: 'other' } } }).encode('NoteEvent', note, 'cuilink.notes'), /401 Unauthorized/);
  } finally {
    await registry.close();
  }
});

test('subject name strategies: record and topic-record by config; the stage codec names the topic of each record', async () => {
  const registry = await startSchemaRegistryStandIn();
  try {
    const make = (subjectNameStrategy: SchemaRegistryOptions['subjectNameStrategy']): ConfluentAvroCodec => new ConfluentAvroCodec({ url: registry.url, subjectNameStrategy });
    await make('record').encode('NoteEvent', note, 'cuilink.notes');
    await make('topic-record').encode('NoteEvent', note, 'cuilink.notes');
    const topic = make('topic');
    await topic.encode('NoteEvent', note, 'a.notes');
    await topic.encode('NoteEvent', note, 'b.notes');
    await topic.encode('NoteEvent', note, 'a.notes');
    assert.deepEqual([...registry.subjects.keys()], ['org.cuilink.NoteEvent', 'cuilink.notes-org.cuilink.NoteEvent', 'a.notes-value', 'b.notes-value']);
    assert.equal(registry.requests.filter((r) => r === 'POST /subjects/a.notes-value/versions').length, 1, 'registered once per subject');
    await assert.rejects(topic.encode('NoteEvent', note), /subject name strategy 'topic' needs the topic/);

    const dead = new AvroStageCodec(make('topic'));
    await dead.encodeDeadLetter({ errorCode: 'X', reason: 'r', sourceTopic: 'cuilink.notes', sourcePartition: 0, sourceOffset: '1', stage: 'decode', failedAt: 1, key: null, value: null, headers: {} }, 'cuilink.dead-letter');
    assert.ok(registry.subjects.has('cuilink.dead-letter-value'), [...registry.subjects.keys()].join(', '));
  } finally {
    await registry.close();
  }
});

test('TLS: an https registry with a self-signed certificate is trusted through its CA file, refused without it (one line)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-registry-tls-'));
  try {
    const certFile = join(dir, 'registry.crt');
    const keyFile = join(dir, 'registry.key');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const cert = readFileSync(certFile, 'utf8');
    const registry = await startSchemaRegistryStandIn({ tls: { cert, key: readFileSync(keyFile, 'utf8') }, basic: { username: 'u', password: 'p' } });
    try {
      assert.match(registry.url, /^https:/);
      const trusted = new ConfluentAvroCodec({ url: registry.url, tls: { ca: cert }, auth: { basic: { username: 'u', password: 'p' } } });
      const encoded = await trusted.encode('NoteEvent', note, 'cuilink.notes');
      assert.equal((await trusted.decode('NoteEvent', encoded.value, {})).noteId, 'n-1');
      await trusted.close();
      await rejectsOneLine(new ConfluentAvroCodec({ url: registry.url, auth: { basic: { username: 'u', password: 'p' } } }).encode('NoteEvent', note, 'cuilink.notes'), /self[- ]signed certificate/);
      const insecure = new ConfluentAvroCodec({ url: registry.url, tls: { rejectUnauthorized: false }, auth: { basic: { username: 'u', password: 'p' } } });
      await insecure.encode('NoteEvent', note, 'cuilink.other');
      await insecure.close();
    } finally {
      await registry.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
