import { gzipSync } from 'node:zlib';
import { int, pick } from './guarded-fuzz.ts';

/**
 * Mutations of operator-supplied files, for the input fuzz tests (test/unit/kb/kb-input-fuzz.test.ts,
 * test/unit/cli/config-input-fuzz.test.ts, test/unit/eval/corpus-input-fuzz.test.ts): bytes as a
 * disk, an editor or a transfer gets them wrong, and JSON values as a hand edit does. Each returns
 * what it did in words, so a failure can be read and rebuilt.
 */

type Random = () => number;

export interface Mutated {
  what: string;
  bytes: Buffer;
}

/** Byte sequences no UTF-8 decoder accepts as they are (a lone surrogate in WTF-8 among them). */
const INVALID_UTF8: readonly number[][] = [[0xff], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80, 0x80]];

function lineStarts(bytes: Buffer): number[] {
  const starts = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x0a && i + 1 < bytes.length) starts.push(i + 1);
  return starts;
}

function lines(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0x0a) continue;
    out.push(bytes.subarray(from, i + 1));
    from = i + 1;
  }
  if (from < bytes.length) out.push(bytes.subarray(from));
  return out;
}

function insert(bytes: Buffer, at: number, piece: Buffer): Buffer {
  return Buffer.concat([bytes.subarray(0, at), piece, bytes.subarray(at)]);
}

const BYTE_MUTATIONS: readonly ((random: Random, bytes: Buffer) => Mutated)[] = [
  (random, bytes) => {
    const at = int(random, bytes.length + 1);
    return { what: `truncated at byte ${at}`, bytes: bytes.subarray(0, at) };
  },
  (random, bytes) => {
    const out = Buffer.from(bytes);
    const flips: string[] = [];
    for (let n = 1 + int(random, 6); n > 0 && out.length > 0; n--) {
      const at = int(random, out.length);
      const mask = 1 + int(random, 255);
      out[at]! ^= mask;
      flips.push(`${at}^${mask}`);
    }
    return { what: `bytes flipped ${flips.join(',')}`, bytes: out };
  },
  (random, bytes) => {
    const seq = pick(random, INVALID_UTF8);
    const at = int(random, bytes.length + 1);
    return { what: `invalid UTF-8 ${Buffer.from(seq).toString('hex')} at ${at}`, bytes: insert(bytes, at, Buffer.from(seq)) };
  },
  (_random, bytes) => ({ what: 'CRLF line endings', bytes: Buffer.from(bytes.toString('latin1').replaceAll('\n', '\r\n'), 'latin1') }),
  (_random, bytes) => ({ what: 'CR line endings', bytes: Buffer.from(bytes.toString('latin1').replaceAll('\n', '\r'), 'latin1') }),
  (random, bytes) => {
    const bom = pick(random, [[0xef, 0xbb, 0xbf], [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf], [0xff, 0xfe], [0xfe, 0xff]]);
    return { what: `BOM ${Buffer.from(bom).toString('hex')}`, bytes: Buffer.concat([Buffer.from(bom), bytes]) };
  },
  (random, bytes) => {
    const starts = lineStarts(bytes);
    const at = pick(random, [...starts, bytes.length]);
    const size = pick(random, [70_000, 1 << 20, 3 << 20]);
    const filler = pick(random, ['a', 'é', '\t', '|', '"', '\\', '{', '[Term]']);
    return { what: `a ${size}-unit line of ${JSON.stringify(filler)} at byte ${at}`, bytes: insert(bytes, at, Buffer.from(`${filler.repeat(Math.ceil(size / filler.length))}\n`)) };
  },
  (random, bytes) => {
    const at = int(random, bytes.length + 1);
    return { what: `NUL bytes at ${at}`, bytes: insert(bytes, at, Buffer.alloc(1 + int(random, 4))) };
  },
  (random, bytes) => {
    const all = lines(bytes);
    if (all.length === 0) return { what: 'no line to delete', bytes };
    const at = int(random, all.length);
    return { what: `line ${at + 1} deleted`, bytes: Buffer.concat(all.filter((_, i) => i !== at)) };
  },
  (random, bytes) => {
    const all = lines(bytes);
    if (all.length === 0) return { what: 'no line to repeat', bytes };
    const at = int(random, all.length);
    const times = pick(random, [2, 50, 5_000]);
    return { what: `line ${at + 1} repeated ${times} times`, bytes: Buffer.concat([...all.slice(0, at), ...Array<Buffer>(times).fill(all[at]!), ...all.slice(at + 1)]) };
  },
  (random, bytes) => {
    const all = lines(bytes);
    if (all.length < 2) return { what: 'no lines to swap', bytes };
    const [a, b] = [int(random, all.length), int(random, all.length)];
    [all[a], all[b]] = [all[b]!, all[a]!];
    return { what: `lines ${a + 1} and ${b + 1} swapped`, bytes: Buffer.concat(all) };
  },
  () => ({ what: 'empty file', bytes: Buffer.alloc(0) }),
  (random) => ({ what: 'blank lines only', bytes: Buffer.from(pick(random, ['\n\n\n', ' \t \n', '\r\n\r\n'])) }),
  (_random, bytes) => ({ what: 'gzipped', bytes: gzipSync(bytes) }),
  (random, bytes) => {
    const gz = gzipSync(bytes);
    const at = 2 + int(random, Math.max(1, gz.length - 2));
    return { what: `gzipped, truncated at byte ${at}`, bytes: gz.subarray(0, at) };
  },
];

/** One byte-level mutation of a valid file. */
export function mutateBytes(random: Random, bytes: Buffer): Mutated {
  return pick(random, BYTE_MUTATIONS)(random, bytes);
}

/** Raw JSON text spliced into a document as it is (what JSON.stringify cannot write: 1e400, `__proto__` keys, duplicate keys). */
class Raw {
  constructor(readonly text: string) {}
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json } | Raw;

/** JSON with deep nesting written without recursion (JSON.stringify overflows the stack on it). */
export function nested(depth: number, kind: 'array' | 'object', inner = '0'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${inner}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
}

function serialize(value: Json): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  if (typeof value === 'object' && value !== null) return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(',')}}`;
  return JSON.stringify(value);
}

/** Values of every type where a config expects one: numbers JSON can only spell as text (1e400 reads as Infinity, -0). */
function hostileValue(random: Random): Json {
  return pick<Json>(random, [
    null,
    true,
    false,
    0,
    -1,
    0.5,
    1.5,
    2 ** 53 + 2,
    -(2 ** 31),
    new Raw('1e400'),
    new Raw('-1e400'),
    new Raw('1e-400'),
    new Raw('-0'),
    new Raw('123456789012345678901234567890'),
    '',
    'x',
    'NaN',
    'Infinity',
    '1',
    '__proto__',
    'é'.repeat(100_000),
    [],
    [null],
    [1, 'a', {}],
    {},
    { a: 1 },
    new Raw('{"__proto__":{"polluted":1}}'),
    new Raw(nested(64, 'array')),
    new Raw(nested(pick(random, [10_000, 100_000]), pick(random, ['array', 'object'] as const))),
    new Raw(`[${Array<string>(100_000).fill('0').join(',')}]`),
  ]);
}

const KEY_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', '\u0000', 'x', 'é'.repeat(1000)];

/** Every path in a JSON value (keys and indexes from the root), the root included. */
function paths(value: Json, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...at, i], out));
  else if (typeof value === 'object' && value !== null && !(value instanceof Raw)) for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

function get(value: Json, path: (string | number)[]): Json {
  return path.reduce<Json>((node, key) => (node as Record<string, Json>)[key]!, value);
}

/** A copy of `root` with the node at `path` replaced (`undefined`: removed). */
function replaced(root: Json, path: (string | number)[], next: Json | undefined): Json {
  if (path.length === 0) return next === undefined ? new Raw('') : next;
  const [head, ...rest] = path;
  if (Array.isArray(root)) {
    const copy = [...root];
    if (rest.length === 0 && next === undefined) copy.splice(head as number, 1);
    else copy[head as number] = replaced(root[head as number]!, rest, next);
    return copy;
  }
  const copy: Record<string, Json> = { ...(root as Record<string, Json>) };
  if (rest.length === 0 && next === undefined) delete copy[head as string];
  else copy[head as string] = replaced(copy[head as string]!, rest, next);
  return copy;
}

/** One structural mutation of a valid JSON document, written as text. */
export function mutateJson(random: Random, valid: unknown): { what: string; text: string } {
  const root = valid as Json;
  const all = paths(root);
  const path = pick(random, all);
  const where = path.length === 0 ? '(root)' : path.join('.');
  const node = get(root, path);
  const op = int(random, 6);
  if (op === 0) {
    const value = hostileValue(random);
    const shown = serialize(value);
    return { what: `${where} := ${shown.length > 40 ? `${shown.slice(0, 40)}… (${shown.length} chars)` : shown}`, text: serialize(replaced(root, path, value)) };
  }
  if (op === 1 && path.length > 0) return { what: `${where} removed`, text: serialize(replaced(root, path, undefined)) };
  if (op === 2 && typeof node === 'object' && node !== null && !Array.isArray(node) && !(node instanceof Raw)) {
    const key = pick(random, KEY_NAMES);
    const value = serialize(hostileValue(random));
    const body = serialize(node).slice(1, -1);
    const extra = `${JSON.stringify(key)}:${value}`;
    return { what: `${where} gets key ${JSON.stringify(key.slice(0, 20))}`, text: serialize(replaced(root, path, new Raw(`{${body}${body ? ',' : ''}${extra}}`))) };
  }
  if (op === 3 && typeof node === 'object' && node !== null && !Array.isArray(node) && !(node instanceof Raw) && Object.keys(node).length > 0) {
    const key = pick(random, Object.keys(node));
    const value = serialize(hostileValue(random));
    return { what: `${where} repeats key ${key} (last one wins)`, text: serialize(replaced(root, path, new Raw(`${serialize(node).slice(0, -1)},${JSON.stringify(key)}:${value}}`))) };
  }
  if (op === 4) {
    const depth = pick(random, [2, 64, 10_000, 100_000]);
    const kind = pick(random, ['array', 'object'] as const);
    return { what: `${where} wrapped in ${depth} ${kind}s`, text: serialize(replaced(root, path, new Raw(nested(depth, kind, serialize(node))))) };
  }
  if (op === 5 && Array.isArray(node) && node.length > 0) {
    const times = pick(random, [1_000, 100_000]);
    return { what: `${where} item 0 repeated ${times} times`, text: serialize(replaced(root, path, Array<Json>(times).fill(node[0]!))) };
  }
  const value = hostileValue(random);
  return { what: `${where} := ${serialize(value).slice(0, 40)}`, text: serialize(replaced(root, path, value)) };
}
