import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reliabilitySvg } from '../../../src/eval/confidence/reliability-svg.ts';
import { calibratedEce, reliability, type ConfidencePoint } from '../../../src/eval/confidence/selective-metrics.ts';

const points: ConfidencePoint[] = [
  ...Array.from({ length: 40 }, (_, i) => ({ confidence: 0.95, correct: i < 38 })),
  ...Array.from({ length: 4 }, (_, i) => ({ confidence: 0.55, correct: i < 2 })),
];

test('reliabilitySvg: a bar and a count per non-empty bin, under the title', () => {
  const svg = reliabilitySvg(reliability(points).rows, 'dev: ECE <0.1> & more');
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.includes('dev: ECE &lt;0.1&gt; &amp; more'), 'the title is escaped');
  assert.equal((svg.match(/fill="#4a7ab5"/g) ?? []).length, 2, 'two non-empty bins, two bars');
  assert.ok(svg.includes('>40</text>') && svg.includes('>4</text>'), 'links per bin');
  assert.ok(!svg.includes('calibrated draws'), 'no bands without a calibrated floor');
});

test('reliabilitySvg: with the calibrated floor, one band per non-empty bin, wider for the bin of 4 links', () => {
  const floor = calibratedEce(points, 400)!;
  assert.equal(floor.bins.filter((b) => b !== null).length, 2);
  assert.equal(floor.bins[0], null, 'an empty bin has no band');
  const wide = floor.bins[5]!;
  const narrow = floor.bins[9]!;
  assert.ok(wide.low <= 0.55 && wide.high >= 0.55 && narrow.low <= 0.95 && narrow.high >= 0.95, 'each band holds its confidence');
  assert.ok(wide.high - wide.low > narrow.high - narrow.low, '4 links vary more than 40');
  const svg = reliabilitySvg(reliability(points).rows, 't', floor);
  const bands = [...svg.matchAll(/<line x1="([\d.]+)" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)" stroke="#333"/g)];
  assert.equal(bands.length, 2);
  // Plot: 40 px padding, 240 px high; share v sits at y = 280 − 240 v.
  const [, , y1, y2] = bands[1]!;
  assert.ok(Math.abs(Number(y1) - (280 - 240 * narrow.low)) < 0.1 && Math.abs(Number(y2) - (280 - 240 * narrow.high)) < 0.1);
  assert.ok(svg.includes(`95% of calibrated draws (their ECE ${floor.median.toFixed(3)})`));
});
