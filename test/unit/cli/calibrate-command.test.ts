import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, ['bin/cuilink.js', 'calibrate', ...args], { cwd: REPO, encoding: 'utf8', timeout: 180_000 });
const INDEX = 'test/fixtures/eval/index';

test('calibrate: bad input is one line naming the flag or the split, exit 2, nothing loaded', () => {
  const cases: [string[], RegExp][] = [
    [['--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json'], /missing required flag --index: calibrate reads the KB of the index it is given, so it has no default; .*pass --index /],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator'], /--out/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', '/nonexistent-dir/x.json'], /--out: cannot write \/nonexistent-dir\/x\.json/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--calibration', 'c.json'], /--calibration: calibrate fits one/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-prevalence', '0.9'], /--nil-prevalence/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--calibrator', 'forest'], /--calibrator: trees or logistic/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--calibrator', 'logistic', '--rounds', '5'], /--rounds: only for --calibrator trees/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--depth', '0'], /--depth/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-confidence', '1.5'], /--nil-confidence/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'sometimes'], /--nil-rule: in-kb, confidence, both or none, not 'sometimes'/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'in-kb', '--nil-runs', '0'], /--nil-rule in-kb needs a NIL part/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'in-kb', '--nil-in-kb', '0.5'], /--nil-in-kb with --nil-rule in-kb: give the threshold or let the rule choose it/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'confidence', '--nil-confidence', '0.2'], /--nil-confidence with --nil-rule confidence/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'both', '--nil-confidence', '0.2'], /--nil-confidence with --nil-rule both/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'both', '--nil-runs', '0'], /--nil-rule both needs a NIL part/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-rule', 'toString'], /--nil-rule: in-kb, confidence, both or none, not 'toString'/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-in-kb', '0.5', '--nil-runs', '0'], /--nil-in-kb needs a NIL part/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--non-entities', '2.5'], /--non-entities/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--non-entities', '0', '--non-entity-seed', '3'], /--non-entity-seed \/ --non-entity-prevalence: only with --non-entities N/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--non-entity-prevalence', '0.9'], /--non-entity-prevalence/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--recalibrate', 'isotonic'], /--recalibrate: none, concept-folds, mixed-folds, not 'isotonic'/],
    // A corpus too small for the tuning split: the split is empty, so there is nothing to fit on.
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json'], /tuning split of 100 documents needs more than \d+ documents/],
  ];
  for (const [args, message] of cases) {
    const result = run(...args);
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    const lines = result.stderr.trim().split('\n').filter((l) => !l.startsWith('npm warn'));
    assert.equal(lines.length, 1, `one line: ${result.stderr}`);
    assert.match(lines[0]!, message);
  }
});

test('calibrate --with-memory: a memory holding labels of the fitted part is refused; one from the other part adds a memory pass to the fit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-calibrate-memory-'));
  try {
    // 110 copies of one small note: enough documents for the 100-document tune part. Its coders
    // file "anemia" under Neoplasms: wrong for the KB alone, learned by a memory. Its last sentence
    // is unmarked text for the non-entity part.
    const note = (id: number, unmarked = ' The cohort was followed for several years in three regional clinics.') => [`${id}|t|Colon cancer and breast cancer.`, `${id}|a|Patients with colon cancer had anemia.${unmarked}`, `${id}\t0\t12\tColon cancer\tSpecificDisease\tD003110`, `${id}\t17\t30\tbreast cancer\tSpecificDisease\tD001943`, `${id}\t46\t58\tcolon cancer\tSpecificDisease\tD003110`, `${id}\t63\t69\tanemia\tDiseaseClass\tD009369`].join('\n');
    const index = join(dir, 'index');
    const built = spawnSync(process.execPath, ['bin/cuilink.js', 'index', 'build', '--kb', 'test/fixtures/eval/mini-kb.jsonl', '--out', index, '--provider', 'cpu', '--threads', '1'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    assert.equal(built.status, 0, built.stderr);
    const corpus = join(dir, 'corpus.PubTator');
    writeFileSync(corpus, `${Array.from({ length: 110 }, (_, i) => note(5000 + i)).join('\n\n')}\n`);
    const memory = (part: string) => {
      const root = join(dir, `memory-${part}`);
      const added = spawnSync(process.execPath, ['bin/cuilink.js', 'memory', 'add', '--memory', root, '--corpus', corpus, '--split', part, '--index', index, '--provider', 'cpu', '--threads', '1'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
      assert.equal(added.status, 0, added.stderr);
      return root;
    };
    const base = ['--index', index, '--corpus', corpus, '--provider', 'cpu', '--threads', '1', '--nil-runs', '0'];
    // The default part is learn (10 of the 110 documents); a memory of its own notes is refused.
    const refused = run(...base, '--out', join(dir, 'x.json'), '--with-memory', memory('learn'));
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /--with-memory .*holds 40 label\(s\) of the learn part's notes/);
    assert.match(run(...base, '--out', join(dir, 'x.json'), '--memory', memory('tune')).stderr, /--memory: calibrate links without a memory/);
    const out = join(dir, 'calibration.json');
    const fitted = run(...base, '--out', out, '--with-memory', join(dir, 'memory-tune'));
    assert.equal(fitted.status, 0, fitted.stderr);
    assert.deepEqual(readdirSync(dir).filter((name) => name.endsWith('.draft')), [], 'the NIL rule\'s draft file is removed');
    type Written = { format: string; right: { kind: string }; nonEntity?: { trainedPrevalence: number; assumedPrevalence: number }; nilConfidence?: number; nilInKb?: number; fit: { split: string; mentions: number; memoryPass?: { mentions: number; memoryDecided: number }; nonEntity?: { perNote: number; seed: number; positives: number } } };
    const file = JSON.parse(readFileSync(out, 'utf8')) as Written;
    assert.equal(file.fit.split, 'learn');
    assert.equal(file.format, 'cuilink-calibration/2');
    assert.equal(file.right.kind, 'trees', 'boosted trees by default');
    assert.equal(file.fit.memoryPass?.mentions, 40, 'the learn part linked again with the memory');
    assert.equal(file.fit.mentions, 80, 'both passes are fitting examples');
    assert.ok(file.fit.memoryPass!.memoryDecided > 0, 'the memory decided links in its pass');
    assert.deepEqual([file.fit.nonEntity?.perNote, file.fit.nonEntity?.seed, file.fit.nonEntity?.positives], [2, 1, 20], 'a non-entity part by default: 2 unmarked spans of each of the 10 notes');
    assert.ok(Math.abs(file.nonEntity!.trainedPrevalence - 20 / 60) < 1e-12 && file.nonEntity!.assumedPrevalence === 0.05, 'fit on 20 spans against 40 links, read at 5%');
    assert.match(fitted.stdout, /^non-entity part: 20 unmarked spans \(seed 1\) against 40 natural links/m);
    assert.ok(file.nilConfidence !== undefined && file.nilConfidence >= 0 && file.nilConfidence <= 1, `a NIL threshold by the rule: ${file.nilConfidence}`);
    assert.equal(file.nilInKb, 0, 'without a NIL part (--nil-runs 0) the rule chooses a threshold on confidence');
    assert.match(fitted.stdout, /^NIL threshold on confidence [0-9.]+( by the rule \(tune part, held out from the fit|: at no threshold)/m);
    // The logistic recipe on the tune part (how a model trained on the learn part is calibrated), with a learn-part memory.
    const logistic = join(dir, 'logistic.json');
    const tuned = run(...base, '--out', logistic, '--split', 'tune', '--calibrator', 'logistic', '--with-memory', join(dir, 'memory-learn'), '--nil-confidence', '0.2');
    assert.equal(tuned.status, 0, tuned.stderr);
    const tuneFile = JSON.parse(readFileSync(logistic, 'utf8')) as Written;
    assert.equal(tuneFile.right.kind, 'logistic');
    assert.equal(tuneFile.fit.split, 'tune');
    assert.equal(tuneFile.fit.mentions, 800);
    assert.equal(tuneFile.nilConfidence, 0.2, '--nil-confidence is recorded as given');
    assert.equal(tuneFile.nilInKb, 0);
    assert.match(tuned.stdout, /^NIL thresholds as given, no rule \(recorded: nilInKb 0, nilConfidence 0\.2\)$/m);
    // Notes with no text away from their annotations leave nothing to learn non-entities from: said, not fit.
    const bare = join(dir, 'bare.PubTator');
    writeFileSync(bare, `${Array.from({ length: 110 }, (_, i) => note(5000 + i, '')).join('\n\n')}\n`);
    const nothing = run('--index', index, '--corpus', bare, '--provider', 'cpu', '--threads', '1', '--nil-runs', '0', '--out', join(dir, 'bare.json'));
    assert.equal(nothing.status, 2, nothing.stderr);
    assert.match(nothing.stderr, /no unmarked span to sample in the 10 notes: the non-entity part needs some \(--non-entities 0 skips it\)/);
    const without = run('--index', index, '--corpus', bare, '--provider', 'cpu', '--threads', '1', '--nil-runs', '0', '--non-entities', '0', '--out', join(dir, 'bare.json'));
    assert.equal(without.status, 0, without.stderr);
    assert.equal((JSON.parse(readFileSync(join(dir, 'bare.json'), 'utf8')) as Written).nonEntity, undefined, '--non-entities 0: no such part');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('calibrate --recalibrate concept-folds: the right part is the unmapped fit through the recorded map; too few concepts is a clear error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-calibrate-concept-folds-'));
  try {
    const index = join(dir, 'index');
    const built = spawnSync(process.execPath, ['bin/cuilink.js', 'index', 'build', '--kb', 'test/fixtures/eval/mini-kb.jsonl', '--out', index, '--provider', 'cpu', '--threads', '1'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    assert.equal(built.status, 0, built.stderr);
    // Five exact names (right) and four made-up mentions annotated with four of those concepts (wrong
    // whatever they link to): each concept has right and wrong mentions, and stage and similarity
    // tell them apart for concepts a fit has not seen.
    const title = 'Colonic neoplasms and breast neoplasms.';
    const abstract = 'Asthma, ochronosis and anemia were seen with blood disorder, bone pain, skin rash and fever.';
    const mentions: [string, string, string][] = [
      ['Colonic neoplasms', 'D003110', 't'], ['breast neoplasms', 'D001943', 't'], ['Asthma', 'D001249', 'a'], ['ochronosis', 'D009794', 'a'], ['anemia', 'D000740', 'a'],
      ['blood disorder', 'D009794', 'a'], ['bone pain', 'D001943', 'a'], ['skin rash', 'D003110', 'a'], ['fever', 'D001249', 'a'],
    ];
    const note = (id: number, annotated = mentions) => [`${id}|t|${title}`, `${id}|a|${abstract}`, ...annotated.map(([text, gold, part]) => {
      const start = part === 't' ? title.indexOf(text) : title.length + 1 + abstract.indexOf(text);
      return `${id}\t${start}\t${start + text.length}\t${text}\tSpecificDisease\t${gold}`;
    })].join('\n');
    const corpus = join(dir, 'corpus.PubTator');
    writeFileSync(corpus, `${Array.from({ length: 110 }, (_, i) => note(7000 + i)).join('\n\n')}\n`);
    const base = ['--index', index, '--corpus', corpus, '--provider', 'cpu', '--threads', '1', '--nil-runs', '0', '--non-entities', '0', '--nil-confidence', '0'];
    type Written = { right: { kind: string; base: number; rate: number; trees: unknown[] }; fit: { recalibrate?: { kind: string; folds: number; seed: number }; mapSlope?: number; mapIntercept?: number } };
    const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Written;
    const mapped = run(...base, '--out', join(dir, 'mapped.json'), '--recalibrate', 'concept-folds');
    assert.equal(mapped.status, 0, mapped.stderr);
    const plain = run(...base, '--out', join(dir, 'plain.json'));
    assert.equal(plain.status, 0, plain.stderr);
    const [m, p] = [read(join(dir, 'mapped.json')), read(join(dir, 'plain.json'))];
    assert.deepEqual(m.fit.recalibrate, { kind: 'concept-folds', folds: 5, seed: 7 });
    assert.equal(p.fit.recalibrate, undefined, 'no map by default');
    const { mapSlope: slope, mapIntercept: intercept } = m.fit;
    assert.ok(slope !== undefined && slope > 0 && intercept !== undefined, `a map was fit: ${slope}, ${intercept}`);
    assert.deepEqual(m.right.trees, p.right.trees, 'the same trees');
    assert.ok(Math.abs(m.right.rate - slope * p.right.rate) < 1e-12 && Math.abs(m.right.base - (slope * p.right.base + intercept)) < 1e-9, 'their logit mapped');
    const mixed = run(...base, '--out', join(dir, 'mixed.json'), '--recalibrate', 'mixed-folds');
    assert.equal(mixed.status, 0, mixed.stderr);
    const x = read(join(dir, 'mixed.json'));
    assert.deepEqual(x.fit.recalibrate, { kind: 'mixed-folds', folds: 5, seed: 7 });
    assert.deepEqual(x.right.trees, p.right.trees, 'the same trees, another map');
    assert.ok(Math.abs(x.right.rate - x.fit.mapSlope! * p.right.rate) < 1e-12 && x.fit.mapSlope !== slope);
    // Only one concept with wrong links: the fold without it leaves right links alone to fit on.
    const oneWrong = join(dir, 'one-wrong.PubTator');
    writeFileSync(oneWrong, `${Array.from({ length: 110 }, (_, i) => note(7000 + i, [...mentions.slice(0, 5), ['blood disorder', 'D007592', 'a']])).join('\n\n')}\n`);
    const refused = run(...base.map((a) => (a === corpus ? oneWrong : a)), '--out', join(dir, 'x.json'), '--recalibrate', 'concept-folds');
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /^cuilink calibrate: without fold \d of 5 every example left is right: the map needs more concepts \(6 groups given; --recalibrate none fits without it\)$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
