import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { readWholeText } from '../../../src/kb/line-reader.ts';
import { tempDir } from './fixtures.ts';

test('readWholeText drops a leading UTF-8 BOM, plain or gzipped, as readLines does', async () => {
  const tmp = tempDir();
  try {
    const content = '\ufeff{"graphs": []}\n';
    const plain = tmp.file('bom.json', content);
    const gz = tmp.file('bom.json.gz', gzipSync(Buffer.from(content, 'utf8')));
    assert.equal(await readWholeText(plain), '{"graphs": []}\n');
    assert.equal(await readWholeText(gz), '{"graphs": []}\n');
  } finally {
    tmp.cleanup();
  }
});

test('readWholeText keeps a U+FEFF that is not the first character', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('inner.txt', 'a\ufeffb');
    assert.equal(await readWholeText(path), 'a\ufeffb');
  } finally {
    tmp.cleanup();
  }
});
