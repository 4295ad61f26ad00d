import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import { ENV_VARS, loadStageConfig } from '../../../src/stream/stage-config.ts';

// docs/stream.md's configuration table is what an integrator reads instead of the code: its
// defaults and variables must be the ones loadStageConfig applies (stage-config.ts: "keep the two in step").
const doc = readFileSync(new URL('../../../docs/stream.md', import.meta.url), 'utf8');

interface Row {
  options: string[];
  env: string;
  defaults: string;
}

function configTable(): Row[] {
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| option | env | default | meaning |'));
  assert.ok(start >= 0, 'docs/stream.md has the configuration table');
  const rows: Row[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    const options = [...cells[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    rows.push({ options, env: cells[1]!, defaults: cells[2]! });
  }
  return rows;
}

/** `a.b` / `.c` / `d`: a later short form (`.c`) is a sibling of the first full path. */
function expandOptions(options: string[]): string[] {
  const first = options[0] ?? '';
  const parent = first.includes('.') ? first.slice(0, first.lastIndexOf('.')) : '';
  return options.map((o) => (o.startsWith('.') ? parent + o : o));
}

/** Defaults that name another option: the code falls back to that option's value. */
const DERIVED = new Set(['windowRecords']);

/** A default cell that is only values (`x` / 12 / true), one per option; undefined for prose. */
function plainDefaults(cell: string): unknown[] | undefined {
  const parts = cell.split(' / ').map((p) => p.trim());
  const values: unknown[] = [];
  for (const part of parts) {
    const m = /^`([^`]*)`$/.exec(part) ?? /^([-\d.]+|true|false)$/.exec(part);
    if (!m) return undefined;
    const raw = m[1]!;
    // A derived default (`<groupId>-<clientId>`, `windowRecords`) is computed where it is used, not by the schema.
    if (raw.includes('<') || DERIVED.has(raw)) return undefined;
    if (/^-?\d+(\.\d+)?$/.test(raw)) values.push(Number(raw));
    else if (raw === 'true' || raw === 'false') values.push(raw === 'true');
    else if (raw.startsWith('[') || raw.startsWith('{')) values.push(JSON.parse(raw));
    else values.push(raw);
  }
  return values;
}

function at(config: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], config);
}

test('every plain default in the configuration table is the default loadStageConfig applies', () => {
  const stage = loadStageConfig({ env: {} });
  // `link` stays as given ({}); the linker applies the link config's own defaults (src/link/link-config.ts).
  const link = parseLinkConfig(stage.link);
  const defaultOf = (option: string) => (option.startsWith('link.') ? at(link, option.slice('link.'.length)) : at(stage, option));
  let checked = 0;
  for (const row of configTable()) {
    const values = plainDefaults(row.defaults);
    if (values === undefined) continue;
    const options = expandOptions(row.options);
    assert.equal(values.length, options.length, `${row.options.join(' / ')}: one default per option (${row.defaults})`);
    options.forEach((option, i) => {
      assert.deepEqual(defaultOf(option), values[i], `docs/stream.md says ${option} defaults to ${JSON.stringify(values[i])}`);
      checked++;
    });
  }
  // Most rows are plain: a table reworded into prose would otherwise check nothing.
  assert.ok(checked >= 50, `only ${checked} defaults checked`);
});

/**
 * A variable is documented when its name is in docs/, or when a line writes it as a short form after
 * a full name of the same family (`CUILINK_SCHEMA_REGISTRY_CERT_FILE` / `_KEY_FILE`, `_PASSWORD(_FILE)`).
 */
function documented(name: string, docs: string): boolean {
  if (docs.includes(name)) return true;
  return docs.split('\n').some((line) => {
    const full = [...line.matchAll(/CUILINK_[A-Z0-9_]+/g)].map((m) => m[0]);
    const shorts = [...line.matchAll(/`(_[A-Z0-9_]+)(\(_[A-Z0-9_]+\))?`/g)].flatMap((m) => (m[2] ? [m[1]!, m[1]! + m[2].slice(1, -1)] : [m[1]!]));
    // `_KEY_FILE` after CUILINK_SCHEMA_REGISTRY_CERT_FILE stands for CUILINK_SCHEMA_REGISTRY_KEY_FILE.
    return shorts.some((short) => name.endsWith(short) && full.some((f) => f.startsWith(`${name.slice(0, -short.length)}_`)));
  });
}

test('a variable the table names for one option sets that option, and every variable is documented', () => {
  const byName = new Map(ENV_VARS.map(([name, path]) => [name, path.join('.')]));
  let paired = 0;
  for (const row of configTable()) {
    const names = [...row.env.matchAll(/`(CUILINK_[A-Z0-9_]+)`/g)].map((m) => m[1]!);
    for (const name of names) assert.ok(byName.has(name) || /_$/.test(name), `docs/stream.md names ${name}, which the stage does not read`);
    const options = expandOptions(row.options);
    if (names.length === 1 && options.length === 1 && /^`CUILINK_[A-Z0-9_]+`( \(.*\))?$/.test(row.env)) {
      assert.equal(byName.get(names[0]!), options[0], `${names[0]} sets ${options[0]}`);
      paired++;
    }
  }
  assert.ok(paired >= 40, `only ${paired} variables paired with their option`);
  const docs = ['stream.md', 'security.md', 'stream-formats.md'].map((f) => readFileSync(new URL(`../../../docs/${f}`, import.meta.url), 'utf8')).join('\n');
  for (const name of byName.keys()) assert.ok(documented(name, docs), `${name} is not documented in docs/`);
});
