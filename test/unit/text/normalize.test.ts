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
