export interface Curve {
  name: string;
  points: { x: number; y: number }[];
}

const COLORS = ['#4a7ab5', '#c33', '#2a9d3a', '#e08a1e', '#8e44ad', '#555'];

/** Accuracy-versus-labels curves as a standalone SVG: one panel per split, x on a log scale, the no-label baseline dashed. */
export function labelCurveSvg(panels: readonly { title: string; curves: readonly Curve[]; baseline: number }[]): string {
  const w = 420;
  const h = 320;
  const pad = { l: 50, r: 10, t: 28, b: 40 };
  const all = panels.flatMap((p) => [...p.curves.flatMap((c) => c.points), { x: NaN, y: p.baseline }]);
  const xs = all.map((p) => p.x).filter(Number.isFinite);
  const ys = all.map((p) => p.y);
  const [x0, x1] = [Math.log(Math.min(...xs)), Math.log(Math.max(...xs))];
  const [y0, y1] = [Math.floor(Math.min(...ys) * 100 - 0.5) / 100, Math.ceil(Math.max(...ys) * 100 + 0.5) / 100];
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const legendH = 16 * (panels[0]?.curves.length ?? 0) + 10;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w * panels.length}" height="${h + legendH}" font-family="sans-serif" font-size="10">`, '<rect width="100%" height="100%" fill="white"/>'];
  panels.forEach((panel, k) => {
    const ox = k * w;
    const X = (v: number) => ox + pad.l + ((Math.log(v) - x0) / Math.max(1e-9, x1 - x0)) * (w - pad.l - pad.r);
    const Y = (v: number) => h - pad.b - ((v - y0) / Math.max(1e-9, y1 - y0)) * (h - pad.t - pad.b);
    parts.push(`<text x="${ox + w / 2}" y="16" text-anchor="middle" font-size="12">acc@1 on ${esc(panel.title)} by labels</text>`);
    parts.push(`<rect x="${ox + pad.l}" y="${pad.t}" width="${w - pad.l - pad.r}" height="${h - pad.t - pad.b}" fill="none" stroke="black"/>`);
    for (const x of xs.filter((v, i) => xs.indexOf(v) === i)) parts.push(`<text x="${X(x).toFixed(1)}" y="${h - pad.b + 14}" text-anchor="middle">${x}</text>`);
    for (let v = y0; v <= y1 + 1e-9; v += 0.01) parts.push(`<text x="${ox + pad.l - 4}" y="${(Y(v) + 3).toFixed(1)}" text-anchor="end">${v.toFixed(2)}</text>`);
    parts.push(`<line x1="${ox + pad.l}" x2="${ox + w - pad.r}" y1="${Y(panel.baseline).toFixed(1)}" y2="${Y(panel.baseline).toFixed(1)}" stroke="#999" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${ox + w / 2}" y="${h - 6}" text-anchor="middle">labels (log scale); dashed: no labels</text>`);
    panel.curves.forEach((c, i) => {
      const color = COLORS[i % COLORS.length]!;
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${c.points.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(' ')}"/>`);
      for (const p of c.points) parts.push(`<circle cx="${X(p.x).toFixed(1)}" cy="${Y(p.y).toFixed(1)}" r="2.5" fill="${color}"/>`);
    });
  });
  (panels[0]?.curves ?? []).forEach((c, i) => {
    const y = h + 10 + i * 16;
    parts.push(`<rect x="${pad.l}" y="${y - 8}" width="12" height="4" fill="${COLORS[i % COLORS.length]}"/><text x="${pad.l + 18}" y="${y - 3}">${esc(c.name)}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
