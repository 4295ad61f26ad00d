import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkerRequest } from '../../../src/cli/linker-flags.ts';
import { InputError } from '../../../src/kb/errors.ts';

// --link-config FILE is checked where the flag is read: a bad file is refused before anything is
// loaded, naming the file and the key. Its errors named neither the file nor the flag ("link
// config: 'topK': …"), and a file holding `null` linked with the defaults without a word.

function withFile(content: string, fn: (file: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-link-config-'));
  try {
    const file = join(dir, 'link.json');
    writeFileSync(file, content);
    fn(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const refused = (file: string, pattern: RegExp) => (error: unknown) => error instanceof InputError && ['BAD_CONFIG', 'BAD_FLAGS'].includes(error.code) && error.message.includes(`--link-config ${file}`) && pattern.test(error.message);

test('a --link-config file with a bad value is refused naming the flag, the file and the key', () => {
  withFile('{"topK": 0}', (file) => assert.throws(() => linkerRequest({ 'link-config': file }), refused(file, /'topK'/)));
  withFile('{"rerank": {"wieght": 0.3}}', (file) => assert.throws(() => linkerRequest({ 'link-config': file }), refused(file, /wieght/)));
});

test('a --link-config file that holds no JSON object is refused, not read as the defaults', () => {
  for (const content of ['null', '[]', '3', '"topK"']) withFile(content, (file) => assert.throws(() => linkerRequest({ 'link-config': file }), refused(file, /JSON object/), content));
});

test('a good --link-config file is passed on as written', () => {
  withFile('{"topK": 7, "rerank": {"policy": "never"}}', (file) => assert.deepEqual(linkerRequest({ 'link-config': file }).config, { topK: 7, rerank: { policy: 'never' } }));
});
