import type { CalibratedEce, ReliabilityRow } from './selective-metrics.ts';

/**
 * A reliability diagram as a standalone SVG: per confidence bin, the share of right links (bars)
 * against the diagonal a calibrated confidence follows; bin counts printed above the bars. With
 * `calibrated`, each bin also gets the range 95% of calibrated draws fall within (a bar outside
 * it is more than sampling; a bin of a few links has a wide one).
 */
export function reliabilitySvg(rows: readonly ReliabilityRow[], title: string, calibrated?: CalibratedEce | null): string {
  const size = 320;
  const pad = 40;
  const plot = size - 2 * pad;
  const x = (v: number) => pad + v * plot;
  const y = (v: number) => size - pad - v * plot;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size + 20}" viewBox="0 0 ${size} ${size + 20}" font-family="sans-serif" font-size="10">`);
  parts.push(`<rect width="100%" height="100%" fill="white"/>`);
  parts.push(`<text x="${size / 2}" y="16" text-anchor="middle" font-size="12">${esc(title)}</text>`);
  if (calibrated) parts.push(`<text x="${size / 2}" y="30" text-anchor="middle" font-size="9">grey: 95% of calibrated draws (their ECE ${calibrated.median.toFixed(3)})</text>`);
  for (const r of rows) {
    if (r.accuracy === null) continue;
    const w = (r.hi - r.lo) * plot;
    parts.push(`<rect x="${x(r.lo).toFixed(1)}" y="${y(r.accuracy).toFixed(1)}" width="${(w - 1).toFixed(1)}" height="${(r.accuracy * plot).toFixed(1)}" fill="#4a7ab5"/>`);
    parts.push(`<text x="${(x(r.lo) + w / 2).toFixed(1)}" y="${(y(r.accuracy) - 3).toFixed(1)}" text-anchor="middle" font-size="8">${r.n}</text>`);
  }
  rows.forEach((r, b) => {
    const band = calibrated?.bins[b];
    if (!band) return;
    const mid = x((r.lo + r.hi) / 2);
    parts.push(`<line x1="${mid.toFixed(1)}" y1="${y(band.low).toFixed(1)}" x2="${mid.toFixed(1)}" y2="${y(band.high).toFixed(1)}" stroke="#333" stroke-width="2" opacity="0.6"/>`);
  });
  parts.push(`<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" stroke="#c33" stroke-dasharray="4 3"/>`);
  parts.push(`<rect x="${pad}" y="${pad}" width="${plot}" height="${plot}" fill="none" stroke="black"/>`);
  for (let t = 0; t <= 10; t += 2) {
    const v = t / 10;
    parts.push(`<text x="${x(v)}" y="${size - pad + 14}" text-anchor="middle">${v.toFixed(1)}</text>`);
    parts.push(`<text x="${pad - 6}" y="${y(v) + 3}" text-anchor="end">${v.toFixed(1)}</text>`);
  }
  parts.push(`<text x="${size / 2}" y="${size - 8}" text-anchor="middle">confidence</text>`);
  parts.push(`<text x="12" y="${size / 2}" text-anchor="middle" transform="rotate(-90 12 ${size / 2})">share right (bars; numbers: links per bin)</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
