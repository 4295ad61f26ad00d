// Derives models/default/abbreviations/clinical-senses.tsv from the clinical abbreviation
// meta-inventory in ../shared/data/clinical-abbreviations (CC BY 4.0; PROVENANCE.md there):
// the Vanderbilt clinic-note and discharge-summary sense inventories and the Stetson sense
// distribution, which carry no other terms. Wikipedia lists (CC BY-SA) and the Berman pathology
// list are left out. One row per (short form, sense): `sf<TAB>sense<TAB>frequency`, lower-case
// short forms, senses as written. Run from the repository root:
//   node scripts/data/derive-clinical-abbreviations.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = join('..', 'shared', 'data', 'clinical-abbreviations');
const rows = new Map();
function add(sf, sense, frequency) {
  sf = sf.trim().toLowerCase();
  sense = sense.trim();
  if (!/^[a-z0-9][a-z0-9-]{1,9}$/.test(sf) || sense.length < 3 || sense.toLowerCase() === sf) return;
  const key = `${sf}\t${sense.toLowerCase()}`;
  const previous = rows.get(key);
  if (!previous || previous.frequency < frequency) rows.set(key, { sf, sense, frequency });
}
for (const file of ['vanderbilt_clinic_notes.txt', 'vanderbilt_discharge_sums.txt']) {
  for (const line of readFileSync(join(dir, file), 'utf8').split('\n').slice(1)) {
    const [sf, sense, , , frequency] = line.split('\t');
    if (sf && sense) add(sf, sense, Number(frequency) || 0);
  }
}
const stetsonTotals = new Map();
const stetson = readFileSync(join(dir, 'sense_distribution_448.txt'), 'utf8').split('\n').map((l) => l.split('\t')).filter((f) => f.length >= 3);
for (const [sf, , count] of stetson) stetsonTotals.set(sf, (stetsonTotals.get(sf) ?? 0) + Number(count));
for (const [sf, sense, count] of stetson) add(sf, sense, Number(count) / (stetsonTotals.get(sf) || 1));
const sorted = [...rows.values()].sort((a, b) => a.sf.localeCompare(b.sf) || b.frequency - a.frequency || a.sense.localeCompare(b.sense));
const header = '# Clinical abbreviation senses, derived by scripts/data/derive-clinical-abbreviations.mjs from the clinical abbreviation meta-inventory (Grossman Liu et al. 2021; Vanderbilt: Wu et al.; Stetson et al. 2002), CC BY 4.0.\n# sf\tsense\tfrequency\n';
writeFileSync(join('models', 'default', 'abbreviations', 'clinical-senses.tsv'), header + sorted.map((r) => `${r.sf}\t${r.sense}\t${r.frequency.toFixed(3)}`).join('\n') + '\n');
console.log(`${sorted.length} senses of ${new Set(sorted.map((r) => r.sf)).size} short forms`);
