import { join } from 'node:path';

/**
 * The KB every MEDIC benchmark links against: the 2017 CTD release, supplemented with the
 * concepts of the 2012 release (the one NCBI-disease was annotated against) whose ids 2017 no
 * longer knows, primary or alt — `cuilink index build --kb-supplement` (docs/accuracy.md).
 */
export const MEDIC_KB = join('..', 'shared', 'data', 'medic', 'CTD_diseases.tsv.gz');
export const MEDIC_SUPPLEMENT = join('..', 'shared', 'data', 'medic', 'medic_06Jul2012.txt.gz');

/** The `--kb` / `--kb-supplement` flags of the benchmarks (`--kb-supplement none`: the KB alone). */
export const MEDIC_KB_FLAGS = {
  kb: { type: 'string', default: MEDIC_KB },
  'kb-supplement': { type: 'string', default: MEDIC_SUPPLEMENT },
} as const;

export function supplementsFlag(value: string | undefined): string[] {
  return value === undefined || value === '' || value === 'none' ? [] : [value];
}
