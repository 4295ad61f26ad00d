import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idPrefix, normalizeId } from '../../../src/kb/ids.ts';

test('normalizeId maps prefixes, bare ids and IRIs to the canonical form', () => {
  const cases: Array<[string, string]> = [
    ['D005955', 'MESH:D005955'],
    ['C538288', 'MESH:C538288'],
    ['C000591739', 'MESH:C000591739'],
    ['C0011849', 'UMLS:C0011849'],
    ['613097', 'OMIM:613097'],
    ['MSH:D005955', 'MESH:D005955'],
    ['mesh:D005955', 'MESH:D005955'],
    ['MESH:D005955', 'MESH:D005955'],
    ['UMLS_CUI:C0011860', 'UMLS:C0011860'],
    ['umls:C0011860', 'UMLS:C0011860'],
    ['OMIM:601665', 'OMIM:601665'],
    ['  MESH:D005955 ', 'MESH:D005955'],
    ['HP_0001250', 'HP:0001250'],
    ['http://purl.obolibrary.org/obo/HP_0001250', 'HP:0001250'],
    ['http://purl.obolibrary.org/obo/DOID_9352', 'DOID:9352'],
    ['DO:DOID:0060395', 'DOID:0060395'],
    ['SNOMEDCT_US_2023_03_01:44054006', 'SNOMEDCT_US:44054006'],
    ['NCI:C26747', 'NCIT:C26747'],
    ['ICD10CM:E11', 'ICD10CM:E11'],
    ['KEGG:04930', 'KEGG:04930'],
    ['', ''],
  ];
  for (const [raw, expected] of cases) assert.equal(normalizeId(raw), expected, raw);
});

test('normalizeId is idempotent', () => {
  for (const raw of ['D005955', 'MSH:D1', 'UMLS_CUI:C0011860', 'HP_0001250', 'DO:DOID:1', '123456', 'foo bar']) {
    const once = normalizeId(raw);
    assert.equal(normalizeId(once), once, raw);
  }
});

test('idPrefix', () => {
  assert.equal(idPrefix('MESH:D005955'), 'MESH');
  assert.equal(idPrefix('D005955'), '');
});
