import type { LinkConfig } from './link-config.ts';

/**
 * The link config a calibration was fit under, as its file records it (`fit.linkConfig`): every
 * setting but the NIL thresholds, which the file itself carries, and the link cache's sizes, which
 * never change a link. The features read the link's scores, margins, stages and memory support,
 * and every one of these settings can move them.
 */
export function fittedLinkConfig(config: LinkConfig): Record<string, unknown> {
  const { nil: _nil, cache: _cache, ...rest } = config;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

/** The settings (dotted paths) whose values differ between a calibration's fit and the config linked with; empty when they agree. */
export function linkConfigDifferences(fitted: unknown, config: LinkConfig): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, path: string) => {
    if (!isObject(a) || !isObject(b)) {
      if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path);
      return;
    }
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of [...keys].sort()) walk(a[key], b[key], path === '' ? key : `${path}.${key}`);
  };
  // Files fit before the cache sizes were left out record them: a size is no difference either.
  const recorded = isObject(fitted) ? Object.fromEntries(Object.entries(fitted).filter(([key]) => key !== 'cache')) : fitted;
  walk(recorded, fittedLinkConfig(config), '');
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
