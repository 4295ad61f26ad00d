import type { LinkConfig } from './link-config.ts';

/**
 * The link config a calibration was fit under, as its file records it (`fit.linkConfig`): every
 * setting but the NIL thresholds, which the file itself carries. The features read the link's
 * scores, margins, stages and memory support, and every one of these settings can move them.
 */
export function fittedLinkConfig(config: LinkConfig): Record<string, unknown> {
  const { nil: _nil, ...rest } = config;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

/** The settings (dotted paths) whose values differ between a calibration's fit and the config linked with; empty when they agree. */
export function linkConfigDifferences(fitted: unknown, config: LinkConfig): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, path: string) => {
    const objects = typeof a === 'object' && a !== null && !Array.isArray(a) && typeof b === 'object' && b !== null && !Array.isArray(b);
    if (!objects) {
      if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path);
      return;
    }
    const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
    for (const key of [...keys].sort()) walk((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`);
  };
  walk(fitted, fittedLinkConfig(config), '');
  return out;
}
