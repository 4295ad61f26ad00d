import type { OfflineEvalResult } from '../offline-eval.ts';

export interface StageRow {
  via: string;
  n: number;
  acc1: number;
  /** Mean confidence of the stage's links; null without a calibration. */
  meanConfidence: number | null;
}

/** acc@1 and mean confidence of the links each stage chose (LinkedMention.via), most links first. */
export function stageBreakdown(result: Pick<OfflineEvalResult, 'scored' | 'linked'>): StageRow[] {
  const rows = new Map<string, { n: number; hits: number; conf: number; withConf: number }>();
  result.scored.forEach((s, i) => {
    const linked = result.linked[i]!;
    const via = linked.via ?? 'none';
    const row = rows.get(via) ?? { n: 0, hits: 0, conf: 0, withConf: 0 };
    row.n++;
    row.hits += Number(s.scores.hit1);
    if (linked.confidence !== null) {
      row.conf += linked.confidence;
      row.withConf++;
    }
    rows.set(via, row);
  });
  return [...rows]
    .map(([via, r]) => ({ via, n: r.n, acc1: r.hits / r.n, meanConfidence: r.withConf > 0 ? r.conf / r.withConf : null }))
    .sort((a, b) => b.n - a.n || (a.via < b.via ? -1 : 1));
}

export function formatStageTable(rows: readonly StageRow[]): string {
  const lines = [`${'via'.padEnd(14)}${'n'.padStart(6)}${'acc@1'.padStart(8)}${'mean conf'.padStart(11)}`];
  for (const r of rows) lines.push(`${r.via.padEnd(14)}${String(r.n).padStart(6)}${r.acc1.toFixed(3).padStart(8)}${(r.meanConfidence === null ? '—' : r.meanConfidence.toFixed(3)).padStart(11)}`);
  return lines.join('\n');
}
