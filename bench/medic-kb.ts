import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The KB every MEDIC benchmark links against: the 2017 CTD release, supplemented with the
 * concepts of the 2012 release (the one NCBI-disease was annotated against) whose ids 2017 no
 * longer knows, primary or alt — `cuilink index build --kb-supplement` — and given the names
 * DOID and HPO call its concepts through their cross-references — `--xref-names`
 * (docs/accuracy.md).
 */
export const MEDIC_KB = join('..', 'shared', 'data', 'medic', 'CTD_diseases.tsv.gz');
export const MEDIC_SUPPLEMENT = join('..', 'shared', 'data', 'medic', 'medic_06Jul2012.txt.gz');
export const MEDIC_XREF_NAMES = [join('..', 'shared', 'data', 'doid', 'doid.obo.gz'), join('..', 'shared', 'data', 'hpo', 'hp.json.gz')];

/** The `--kb` / `--kb-supplement` / `--xref-names` flags of the benchmarks (`none`: without). */
export const MEDIC_KB_FLAGS = {
  kb: { type: 'string', default: MEDIC_KB },
  'kb-supplement': { type: 'string', default: MEDIC_SUPPLEMENT },
  'xref-names': { type: 'string', default: MEDIC_XREF_NAMES.join(',') },
} as const;

export interface MedicKbFlagValues {
  kb: string;
  'kb-supplement'?: string;
  'xref-names'?: string;
}

/** What the flags ask for: the KB, its supplements and xref-name sources, and every file they name. */
export function medicKb(values: MedicKbFlagValues): { kb: string; supplements: string[]; xrefNames: string[]; files: string[] } {
  const supplements = listFlag(values['kb-supplement']);
  const xrefNames = listFlag(values['xref-names']);
  return { kb: values.kb, supplements, xrefNames, files: [values.kb, ...supplements, ...xrefNames] };
}

function listFlag(value: string | undefined): string[] {
  if (value === undefined || value === '' || value === 'none') return [];
  return value.split(',').filter((path) => path.length > 0);
}

/** Exits 2 naming the first input file that is missing: the benchmarks need ../shared/data. */
export function requireBenchFiles(benchmark: string, files: readonly string[]): void {
  for (const file of files) {
    if (!existsSync(file)) {
      console.error(`${benchmark}: ${file} not found (the benchmark needs ../shared/data)`);
      process.exit(2);
    }
  }
}
