import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeName } from '../../../src/text/normalize.ts';

test('case, accents, punctuation, possessives and spacing do not matter', () => {
  assert.equal(normalizeName("Alzheimer's Disease"), 'alzheimer disease');
  assert.equal(normalizeName('Alzheimer-Disease'), 'alzheimer disease');
  assert.equal(normalizeName('  Sjögren   syndrome '), 'sjogren syndrome');
  assert.equal(normalizeName('Diabetes Mellitus, Type 2'), 'diabetes mellitus type 2');
});

test('a possessive written with any apostrophe-like mark is dropped', () => {
  for (const mark of ["'", '’', 'ʼ', '´', '`', '′', '＇']) assert.equal(normalizeName(`Alzheimer${mark}s disease`), 'alzheimer disease', mark);
  assert.equal(normalizeName("ALZHEIMER'S DISEASE"), 'alzheimer disease');
});

test('distinct names stay distinct', () => {
  assert.notEqual(normalizeName('type 1 diabetes'), normalizeName('type 2 diabetes'));
  assert.equal(normalizeName('!!!'), '');
});

test('a sign is part of the name: plus and minus name different concepts', () => {
  // Two DOID concepts whose names differ only by the sign.
  assert.notEqual(normalizeName('EZB-MYC+ DLBCL'), normalizeName('EZB-MYC- DLBCL'));
  assert.notEqual(normalizeName('(+)ssRNA virus infection'), normalizeName('(-)ssRNA virus infection'));
  assert.notEqual(normalizeName('DOA+'), normalizeName('DOA'));
  assert.equal(normalizeName('DOA+'), normalizeName('DOA plus'));
  assert.equal(normalizeName('ＧＥＦＳ＋1'), normalizeName('GEFS+1'));
  assert.equal(normalizeName('G6PD A−'), normalizeName('G6PD A-'));
  assert.equal(normalizeName('EZB-MYC+/- DLBCL'), 'ezb myc plus minus dlbcl');
  assert.equal(normalizeName('p53-/- mice'), 'p53 minus minus mice');
  // A key is its own key: code that normalizes twice finds the same entry.
  for (const name of ['EZB-MYC- DLBCL', '(+)ssRNA virus', 'G6PD A−']) assert.equal(normalizeName(normalizeName(name)), normalizeName(name));
});

test('a hyphen that joins words, or stands for a shared word-end, is still punctuation', () => {
  assert.equal(normalizeName('X-linked'), 'x linked');
  assert.equal(normalizeName('type 2 - diabetes'), 'type 2 diabetes');
  assert.equal(normalizeName('Combined D-2- and L-2-hydroxyglutaric aciduria'), 'combined d 2 and l 2 hydroxyglutaric aciduria');
  assert.equal(normalizeName('alpha- or beta-thalassemia'), 'alpha or beta thalassemia');
  assert.equal(normalizeName('breast-, ovarian- and colon cancer'), 'breast ovarian and colon cancer');
});
