// The flag groups several commands share (encoder, linker, Kafka) print one help text each: what
// their parsing reads — an environment variable, a link-config key — must be named in it, and a
// command that refuses one of the shared flags must not offer it in its own --help.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENCODER_FLAGS_HELP, encoderRequest } from '../../../src/cli/encoder-flags.ts';
import { KAFKA_FLAGS_HELP } from '../../../src/cli/kafka-flags.ts';
import { LINKER_FLAGS_HELP } from '../../../src/cli/linker-flags.ts';
import { calibrate } from '../../../src/cli/commands/calibrate.ts';
import { KAFKA_SECURITY_ENV_VARS } from '../../../src/stream/kafka-security.ts';
import { SCHEMA_REGISTRY_ENV_VARS } from '../../../src/stream/avro/schema-registry-config.ts';
import { linkConfigKeysMissing } from '../../support/link-config-keys.ts';

/** A variable is named in full, or as a `_SUFFIX` after a full name of its family (`CUILINK_SASL_PASSWORD or _PASSWORD_FILE`). */
function named(variable: string, help: string): boolean {
  if (new RegExp(`\\b${variable}\\b`).test(help)) return true;
  const fulls = help.match(/CUILINK_[A-Z0-9_]+/g) ?? [];
  const shorts = help.match(/(?<![A-Z0-9_])_[A-Z0-9_]+/g) ?? [];
  return shorts.some((short) => variable.endsWith(short) && fulls.some((full) => full.startsWith(`${variable.slice(0, -short.length)}_`)));
}

test('the encoder flags\' help names each variable a flag falls back to, and each is read', () => {
  const variables = [...new Set(readFileSync('src/cli/encoder-flags.ts', 'utf8').match(/CUILINK_[A-Z0-9_]+/g) ?? [])];
  assert.ok(variables.length >= 2, variables.join(', '));
  for (const variable of variables) {
    // Read: a bad value in it is refused naming it (so this list is what the code reads).
    const before = process.env[variable];
    process.env[variable] = 'no-such-choice';
    try {
      assert.throws(() => encoderRequest({}), (e: Error) => e.message.startsWith(`environment variable ${variable} must be one of`), variable);
    } finally {
      if (before === undefined) delete process.env[variable];
      else process.env[variable] = before;
    }
    assert.ok(named(variable, ENCODER_FLAGS_HELP), `${variable} is read but the encoder flags' help does not name it`);
  }
});

test('the Kafka tools\' help names every variable their connection and schema registry read', () => {
  const variables = ['CUILINK_BROKERS', ...KAFKA_SECURITY_ENV_VARS.map(([name]) => name), ...SCHEMA_REGISTRY_ENV_VARS.map(([name]) => name)];
  assert.deepEqual(variables.filter((variable) => !named(variable, KAFKA_FLAGS_HELP)), []);
});

test('named() takes a suffix only after a full name of the same family', () => {
  assert.ok(named('CUILINK_SASL_PASSWORD_FILE', 'CUILINK_SASL_PASSWORD or _PASSWORD_FILE'));
  assert.ok(!named('CUILINK_SASL_PASSWORD_FILE', 'CUILINK_SSL; _PASSWORD_FILE'));
  assert.ok(!named('CUILINK_SCHEMA_REGISTRY_TLS_REJECT_UNAUTHORIZED', 'CUILINK_SCHEMA_REGISTRY_CA_FILE, _CERT_FILE'));
});

test('the --link-config help names every top-level link-config key, and every key of a block it spells out', () => {
  assert.deepEqual(linkConfigKeysMissing(LINKER_FLAGS_HELP), []);
});

test('calibrate --help does not offer the linker flags it refuses (--memory, --calibration)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-calibrate-help-'));
  try {
    for (const flag of ['memory', 'calibration']) {
      const args = ['--index', 'test/fixtures/eval/index', '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', join(dir, 'c.json'), `--${flag}`, 'x'];
      await assert.rejects(calibrate.run(args), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message.startsWith(`--${flag}:`), flag);
      // An option line is "  --flag[, --flag] ARG   description": the entry naming the flag must say it is refused.
      const entries = calibrate.usage.split('\n').filter((line) => new RegExp(`^  (?:--[a-z-]+(?: [A-Z|.]+)?, )*--${flag}\\b`).test(line));
      assert.ok(entries.length > 0, `--${flag} is accepted (and refused) but calibrate --help does not name it`);
      for (const entry of entries) assert.match(entry, /refused/, `calibrate --help offers --${flag}: ${entry.trim()}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
