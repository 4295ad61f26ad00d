// Flags a command accepted and then silently ignored: each such combination is refused up front,
// before any broker or KB is touched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluator } from '../../../src/cli/commands/evaluator.ts';
import { goldSample } from '../../../src/cli/commands/gold-sample.ts';

const refused = (message: string) => (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message === message;

test('evaluator --index refuses every KB-loading flag that only --kb reads', async () => {
  const cases: [string[], string][] = [
    [['--kb-format', 'obo'], 'kb-format'],
    [['--umls-sab', 'MSH'], 'umls-sab'],
    [['--umls-lang', 'ENG'], 'umls-lang'],
    [['--umls-tui', 'T047'], 'umls-tui'],
    [['--all-synonyms'], 'all-synonyms'],
    [['--umls-keep-suppressed'], 'umls-keep-suppressed'],
    [['--kb-supplement', 'old.obo'], 'kb-supplement'],
    [['--xref-names', 'other.obo'], 'xref-names'],
  ];
  for (const [args, flag] of cases) {
    await assert.rejects(evaluator.run(['--index', 'test/fixtures/eval/index', '--brokers', '127.0.0.1:1', ...args]), refused(`--${flag} goes with --kb: an index already holds its KB`), flag);
  }
});

test('gold-sample --partitions without --create-topics is refused (it sizes only topics that creates)', async () => {
  await assert.rejects(goldSample.run(['--corpus', 'test/fixtures/eval/sample.PubTator', '--fraction', '0.5', '--partitions', '3', '--brokers', '127.0.0.1:1']), refused('--partitions: only with --create-topics (it sizes the topics that creates)'));
});

test('gold-sample --seed with --review-topic or --request-topic is refused (the seed draws only a --fraction sample)', async () => {
  for (const flag of ['review-topic', 'request-topic']) {
    await assert.rejects(goldSample.run(['--corpus', 'test/fixtures/eval/sample.PubTator', `--${flag}`, 'cuilink.review', '--seed', '3', '--brokers', '127.0.0.1:1']), refused('--seed: only with --fraction (it draws the sample; --review-topic and --request-topic name the mentions)'), flag);
  }
});

test('evaluator --min-samples without --floor, --baseline or --calibration-alpha is refused (it only gates the alerts)', async () => {
  await assert.rejects(evaluator.run(['--index', 'test/fixtures/eval/index', '--brokers', '127.0.0.1:1', '--min-samples', '20']), refused('--min-samples: only with --floor A, --baseline A or --calibration-alpha A (it sets when the alerts judge a window)'));
});

test('evaluator --calibration-alpha outside (0, 1) or not a number is refused, naming the flag, before any broker is touched', async () => {
  for (const [value, message] of [
    ['0', '--calibration-alpha must be > 0, got 0'],
    ['1', '--calibration-alpha must be < 1, got 1'],
    ['-0.01', '--calibration-alpha must be > 0, got -0.01'],
    ['1.5', '--calibration-alpha must be < 1, got 1.5'],
    ['often', "--calibration-alpha must be a number, got 'often'"],
    ['', "--calibration-alpha must be a number, got ''"],
  ] as const) {
    await assert.rejects(evaluator.run(['--index', 'test/fixtures/eval/index', '--brokers', '127.0.0.1:1', `--calibration-alpha=${value}`, '--min-samples', '20']), refused(message), value);
  }
});
