import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_NIL_CONFIDENCE, parseLinkConfig } from '../../../src/link/link-config.ts';
import { InputError } from '../../../src/kb/errors.ts';

/** Asserts that parsing throws a BAD_CONFIG InputError whose message names `word`. */
function rejects(input: unknown, word: string, what: string): void {
  assert.throws(
    () => parseLinkConfig(input),
    (error: unknown) => {
      assert.ok(error instanceof InputError, `${what}: ${String(error)}`);
      assert.equal(error.code, 'BAD_CONFIG', what);
      assert.ok(error.message.includes(word), `${what}: message '${error.message}' does not name '${word}'`);
      return true;
    },
    what,
  );
}

test('a misspelt key at the root is refused and named', () => {
  rejects({ topk: 5 }, 'topk', 'root');
  rejects({ retrieveK: 20, abbreviatons: false }, 'abbreviatons', 'root among valid keys');
});

test('a misspelt key inside each nested object is refused and named', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['rerank', { rerank: { wieght: 0.3 } }, 'wieght'],
    ['nil', { nil: { confidance: 0.3 } }, 'confidance'],
    ['memory', { memory: { minSuport: 2 } }, 'minSuport'],
    ['query', { query: { headNoun: ['disease'] } }, 'headNoun'],
    ['hierarchy', { hierarchy: { penality: 0.02 } }, 'penality'],
    ['cache', { cache: { maxEntires: 10 } }, 'maxEntires'],
  ];
  for (const [where, input, key] of cases) {
    rejects(input, key, where);
    // The same object with its key spelt right parses.
    const fixed = { [where]: {} };
    assert.doesNotThrow(() => parseLinkConfig(fixed), where);
  }
});

test('defaults parse from nothing, from {} and from undefined alike', () => {
  const a = parseLinkConfig({});
  assert.deepEqual(parseLinkConfig(undefined), a);
  assert.deepEqual(parseLinkConfig(null), a);
  assert.equal(a.topK, 5);
  assert.equal(a.retrieveK, 20);
  assert.equal(a.rerank.policy, 'ambiguous');
  assert.equal(a.rerank.weight, 0.3);
  assert.equal(a.nil.threshold, 0);
  assert.deepEqual(a.query.headNouns, [], 'head nouns are off by default (no effect on train)');
  assert.equal(a.query.loose, true);
  assert.equal(a.hierarchy.penalty, 0.02);
  assert.equal(a.cache.maxEntries, 100_000);
  assert.equal(a.memory.minSupport, 1);
});

test('nil.confidence defaults to DEFAULT_NIL_CONFIDENCE, takes [0, 1] and rejects 1.5', () => {
  assert.equal(parseLinkConfig({}).nil.confidence, DEFAULT_NIL_CONFIDENCE);
  assert.equal(parseLinkConfig({ nil: { threshold: 0.1 } }).nil.confidence, DEFAULT_NIL_CONFIDENCE);
  assert.equal(parseLinkConfig({ nil: { confidence: 0.55 } }).nil.confidence, 0.55);
  assert.equal(parseLinkConfig({ nil: { confidence: 0 } }).nil.confidence, 0);
  assert.equal(parseLinkConfig({ nil: { confidence: 1 } }).nil.confidence, 1);
  rejects({ nil: { confidence: 1.5 } }, 'nil.confidence', 'confidence above 1');
  rejects({ nil: { confidence: -0.1 } }, 'nil.confidence', 'confidence below 0');
  rejects({ nil: { confidence: 'high' } }, 'nil.confidence', 'confidence not a number');
});

test('the origin prefixes the message', () => {
  assert.throws(() => parseLinkConfig({ rerank: { wieght: 1 } }, 'my.json'), (error: unknown) => error instanceof InputError && error.message.startsWith('my.json:') && error.message.includes('wieght'));
});

test('a number that JSON can only spell as 1e400 (Infinity) is refused, naming its key: it made memory scores NaN', () => {
  rejects(JSON.parse('{"memory": {"kbVotes": 1e400}}'), 'memory.kbVotes', 'kbVotes');
  rejects(JSON.parse('{"memory": {"bonus": -1e400}}'), 'memory.bonus', 'bonus');
  rejects({ memory: { minSupport: Number.POSITIVE_INFINITY } }, 'memory.minSupport', 'minSupport given in code');
});
