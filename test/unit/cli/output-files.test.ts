import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, closeSync, existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkWritable, openReplacement, refuseClobbering, sameFile, writeOutput } from '../../../src/cli/output-files.ts';

function inTemp(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-output-files-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('sameFile: one inode under any spelling or hard link; missing paths by their absolute path', () => {
  inTemp((dir) => {
    const file = join(dir, 'a.jsonl');
    writeFileSync(file, 'x\n');
    linkSync(file, join(dir, 'hard.jsonl'));
    symlinkSync(file, join(dir, 'soft.jsonl'));
    assert.ok(sameFile(file, join(dir, '.', 'a.jsonl')));
    assert.ok(sameFile(file, join(dir, 'hard.jsonl')));
    assert.ok(sameFile(file, join(dir, 'soft.jsonl')));
    assert.ok(!sameFile(file, join(dir, 'other.jsonl')));
    assert.ok(sameFile(join(dir, 'new.jsonl'), join(dir, 'sub', '..', 'new.jsonl')));
  });
});

test('refuseClobbering: an output naming an input or another output is refused, naming both flags; stdin/stdout never clash', () => {
  inTemp((dir) => {
    const input = join(dir, 'in.jsonl');
    writeFileSync(input, 'x\n');
    assert.throws(() => refuseClobbering([['out', input]], [['in', input]]), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && /^--out .*in\.jsonl is the --in file/.test(e.message));
    assert.throws(() => refuseClobbering([['tasks', join(dir, 'x')], ['jsonl', join(dir, 'x')]], []), /--tasks and --jsonl must be different files/);
    refuseClobbering([['out', '-'], ['errors', undefined]], [['in', '-']]);
    refuseClobbering([['out', join(dir, 'out.jsonl')]], [['in', input]]);
  });
});

test('checkWritable: an unwritable path fails at once naming the flag; the file is left as it was', () => {
  inTemp((dir) => {
    assert.throws(() => checkWritable(join(dir, 'missing', 'x.json'), 'out'), (e: Error & { code?: string }) => e.code === 'OUTPUT_ERROR' && /^--out: cannot write .*missing\/x\.json: ENOENT/.test(e.message));
    assert.throws(() => checkWritable(dir, 'errors'), /--errors: cannot write .*: a directory, not a file$/);
    const existing = join(dir, 'kept.json');
    writeFileSync(existing, 'previous');
    checkWritable(existing, 'out');
    assert.equal(readFileSync(existing, 'utf8'), 'previous');
    const fresh = join(dir, 'fresh.json');
    checkWritable(fresh, 'out');
    assert.ok(!existsSync(fresh), 'a file it had to create is removed again');
    checkWritable('/dev/null', 'out');
  });
});

test('openReplacement: written beside the file, renamed over it on commit (mode kept), dropped on discard', () => {
  inTemp((dir) => {
    const out = join(dir, 'out.jsonl');
    writeFileSync(out, 'previous\n');
    chmodSync(out, 0o640);
    const dropped = openReplacement(out, 'out');
    writeSync(dropped.fd, 'half');
    closeSync(dropped.fd);
    dropped.discard();
    assert.equal(readFileSync(out, 'utf8'), 'previous\n');
    assert.deepEqual(readdirSync(dir), ['out.jsonl']);

    const kept = openReplacement(out, 'out');
    writeSync(kept.fd, 'new\n');
    closeSync(kept.fd);
    assert.equal(readFileSync(out, 'utf8'), 'previous\n', 'untouched until the commit');
    kept.commit();
    kept.discard();
    assert.equal(readFileSync(out, 'utf8'), 'new\n');
    assert.equal(statSync(out).mode & 0o777, 0o640);
    assert.deepEqual(readdirSync(dir), ['out.jsonl']);

    // A symlinked output stays a link: the file it names is replaced.
    const target = join(dir, 'target.jsonl');
    writeFileSync(target, 'old\n');
    symlinkSync(target, join(dir, 'link.jsonl'));
    const viaLink = openReplacement(join(dir, 'link.jsonl'), 'out');
    writeSync(viaLink.fd, 'linked\n');
    closeSync(viaLink.fd);
    viaLink.commit();
    assert.equal(readFileSync(target, 'utf8'), 'linked\n');
    assert.ok(readdirSync(dir).includes('link.jsonl'));

    assert.throws(() => openReplacement(join(dir, 'missing', 'x.jsonl'), 'out'), /--out .*missing\/x\.jsonl: ENOENT: no such file or directory$/);
    assert.throws(() => openReplacement(dir, 'out'), /a directory, not a file/);
    // A device is written directly: there is nothing to rename over.
    const devNull = openReplacement('/dev/null', 'out');
    closeSync(devNull.fd);
    devNull.commit();
    assert.ok(statSync('/dev/null').isCharacterDevice());
  });
});

test("an output file given as '-' is refused naming the flag (link and kb export read it as stdout), not written to a file named '-'", () => {
  const refused = (flag: string) => (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message === `--${flag} -: this output is written to a file, not to stdout: give a file name`;
  assert.throws(() => checkWritable('-', 'predictions'), refused('predictions'));
  assert.throws(() => writeOutput('-', 'mention text\n', 'errors'), refused('errors'));
  assert.equal(existsSync('-'), false);
});
