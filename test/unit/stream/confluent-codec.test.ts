import { test } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { ConfluentAvroCodec, createRecordCodec, knownSchemas, noteInputToNoteEvent, PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { startSchemaRegistryStandIn } from '../../support/schema-registry-stand-in.ts';

// Confluent Schema Registry and Karapace cannot be installed here (see docs/stream-formats.md), so
// these tests run the client against an in-process stand-in of the registry's REST API.

const note = noteInputToNoteEvent({ noteId: 'n-2', text: 'Fever.', mentions: [{ id: '0-5', start: 0, end: 5, text: 'Fever', label: 'Disease', score: 0.5 }] }, 1000);

function wire(id: number, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeInt32BE(id, 1);
  return Buffer.concat([header, body]);
}

test('Confluent wire format: magic byte + registered schema id under <topic>-value; another process decodes it by fetching the schema by id', async () => {
  const registry = await startSchemaRegistryStandIn();
  try {
    const producer = createRecordCodec({ schemaRegistry: { url: registry.url } });
    assert.equal(producer.format, 'confluent');
    const encoded = await producer.encode('NoteEvent', note, 'cuilink.notes');
    assert.equal(encoded.value[0], 0);
    const id = encoded.value.readInt32BE(1);
    assert.equal(id, 1);
    // TopicNameStrategy by default (it was RecordNameStrategy, org.cuilink.NoteEvent, before issue 28).
    assert.ok(registry.requests.includes('POST /subjects/cuilink.notes-value/versions'), registry.requests.join(', '));
    await producer.encode('NoteEvent', note, 'cuilink.notes');
    assert.equal(registry.requests.filter((r) => r.startsWith('POST')).length, 1, 'registered once per kind');

    const consumer = new ConfluentAvroCodec({ url: registry.url });
    const decoded = await consumer.decode('NoteEvent', encoded.value, {});
    assert.deepEqual({ ...decoded, mentions: decoded.mentions.map((m) => ({ ...m })) }, note);
    assert.ok(registry.requests.includes(`GET /schemas/ids/${id}`));
  } finally {
    await registry.close();
  }
});

test('Confluent format evolution: a v1 NoteEvent registered by an older producer is read with defaults', async () => {
  const registry = await startSchemaRegistryStandIn();
  try {
    const v1 = knownSchemas().all('NoteEvent').find((s) => !s.current)!;
    const id = registry.register('org.cuilink.NoteEvent', JSON.stringify(v1.raw));
    const { nerModelVersion: _dropped, ...v1Record } = { ...note, nerModelVersion: 'gone' };
    const decoded = await new ConfluentAvroCodec({ url: registry.url }).decode('NoteEvent', wire(id, v1.type.toBuffer(v1Record)), {});
    assert.equal(decoded.nerModelVersion, null);
    assert.equal(decoded.noteId, 'n-2');
  } finally {
    await registry.close();
  }
});

test('Confluent codec errors: unknown id → UNKNOWN_SCHEMA, no magic byte → UNDECODABLE, wrong record kind → UNKNOWN_SCHEMA; plain records still read', async () => {
  const registry = await startSchemaRegistryStandIn();
  try {
    const codec = new ConfluentAvroCodec({ url: registry.url });
    const expectCode = async (promise: Promise<unknown>, code: string): Promise<void> => {
      await assert.rejects(promise, (error: unknown) => error instanceof CuilinkError && error.code === code && !error.retriable);
    };
    await expectCode(codec.decode('NoteEvent', wire(99, Buffer.from([2, 0])), {}), 'UNKNOWN_SCHEMA');
    await expectCode(codec.decode('NoteEvent', Buffer.from('plain text'), {}), 'UNDECODABLE');
    const goldId = registry.register('org.cuilink.GoldMention', JSON.stringify(knownSchemas().current('GoldMention').raw));
    await expectCode(codec.decode('NoteEvent', wire(goldId, Buffer.from([0])), {}), 'UNKNOWN_SCHEMA');
    const plainRecord = await new PlainAvroCodec().encode('NoteEvent', note);
    assert.equal((await codec.decode('NoteEvent', plainRecord.value, plainRecord.headers)).noteId, 'n-2');
  } finally {
    await registry.close();
  }
});

test('a registry id whose schema cannot be read as Avro (JSON Schema, unknown type, an Avro schema avsc refuses) is UNKNOWN_SCHEMA, not retriable', async () => {
  // The registry answers; what it answers can never be a NoteEvent's writer schema. These were
  // REGISTRY_UNAVAILABLE and retriable: the stage retried, handed the partition back, and read the
  // same record again, for ever (a JSON-serialized record on the notes topic stopped the stream).
  const registry = await startSchemaRegistryStandIn();
  try {
    const codec = new ConfluentAvroCodec({ url: registry.url });
    const unreadable = [
      registry.register('other-json', JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', javaType: 'org.example.Note' }), 'JSON'),
      registry.register('other-json-2020', JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }), 'JSON'),
      registry.register('other-xml', '<schema/>', 'XML'),
      registry.register('other-avro', JSON.stringify({ type: 'record', name: 'NoteEvent', namespace: 'org.cuilink', fields: [{ name: 'noteId', type: 'string', default: 5 }] })),
    ];
    for (const id of unreadable) {
      await assert.rejects(codec.decode('NoteEvent', wire(id, Buffer.from('{"noteId":"n"}')), {}), (error: unknown) => error instanceof CuilinkError && error.code === 'UNKNOWN_SCHEMA' && !error.retriable && error.message.includes(`schema id ${id}`), `schema id ${id}`);
    }
  } finally {
    await registry.close();
  }
});

test('an answer that holds no schema (a proxy page in front of the registry) stays REGISTRY_UNAVAILABLE and retriable: dead-lettered, it would drain the stream', async () => {
  const bodies = ['<html>Service Unavailable</html>', JSON.stringify({ message: 'maintenance' })];
  for (const body of bodies) {
    const proxy = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(body));
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const codec = new ConfluentAvroCodec({ url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
      await assert.rejects(codec.decode('NoteEvent', wire(1, Buffer.from([0])), {}), (error: unknown) => error instanceof CuilinkError && error.code === 'REGISTRY_UNAVAILABLE' && error.retriable, body);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  }
});

test('an unreachable registry is REGISTRY_UNAVAILABLE and retriable (the stage retries instead of dead-lettering)', async () => {
  const registry = await startSchemaRegistryStandIn();
  const url = registry.url;
  await registry.close();
  const codec = new ConfluentAvroCodec({ url });
  await assert.rejects(codec.decode('NoteEvent', wire(1, Buffer.from([0])), {}), (error: unknown) => error instanceof CuilinkError && error.code === 'REGISTRY_UNAVAILABLE' && error.retriable);
  await assert.rejects(codec.encode('NoteEvent', note, 'cuilink.notes'), (error: unknown) => error instanceof CuilinkError && error.code === 'REGISTRY_UNAVAILABLE' && error.retriable);
});
