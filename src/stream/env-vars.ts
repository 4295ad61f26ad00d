// Environment variables as config: the parsers and the path setter (and getter) of the stage's ENV_VARS
// (stage-config.ts), KAFKA_SECURITY_ENV_VARS (kafka-security.ts) and SCHEMA_REGISTRY_ENV_VARS
// (avro/schema-registry-config.ts), and how a refusal names where a value came from.

import { isObject } from '../kb/safe-json.ts';

/** A variable's text as a config value; text it does not recognise is passed on for the schema to name. */
export type EnvParser = (value: string) => unknown;
/** An environment variable, the config path it sets and how its text is parsed. */
export type EnvVar = [string, string[], EnvParser];

export const asString: EnvParser = (v) => v;
export const asBool: EnvParser = (v) => (/^(1|true|yes|on)$/i.test(v) ? true : /^(0|false|no|off)$/i.test(v) ? false : v);

/** Sets `target` at `path`, making (or replacing a non-object with) an object at each step before the last. */
export function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

/** The value at `path`, or undefined where a step is missing or no object. */
export function getPath(source: Record<string, unknown>, path: string[]): unknown {
  return path.reduce<unknown>((node, key) => (typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined), source);
}

/** What the stage config was made of, for naming where a refused value came from. */
export interface ConfigSources {
  /** The merged input: the file, then the variables, overrides and command defaults. */
  raw: Record<string, unknown>;
  /** The file alone, when one was given. */
  fromFile: Record<string, unknown> | undefined;
  file: string | undefined;
  /** Every variable that can set a key, and the names of those that were set. */
  variables: readonly EnvVar[];
  fromEnv: string[];
  /** The paths the overrides (command flags) set. */
  overrides: string[][];
}

const isUnder = (prefix: string[], path: string[]): boolean => prefix.every((key, i) => path[i] === key);

/**
 * `<where it came from>: '<key>'` for a refusal of the value at `path`. Its source is the variable
 * that set it or an object above it (CUILINK_BROKERS for 'brokers.1'), when one did. A key that
 * holds an object (refused whole, as `topics` naming one topic twice) or that no source set
 * (`sasl.username` missing beside the other SASL variables) was made by whatever wrote into or
 * beside it: the file and the variables there. Anything else came from the file. A key no
 * source set is followed by the variable that would set it.
 */
export function refusedKey(path: string[], sources: ConfigSources): string {
  const fileOrigin = sources.file ? `config ${sources.file}` : 'config';
  const overridden = sources.overrides.some((override) => isUnder(override, path));
  const set = sources.variables.filter(([name]) => sources.fromEnv.includes(name));
  const setter = overridden ? undefined : set.filter(([, from]) => isUnder(from, path)).sort((a, b) => b[1].length - a[1].length)[0];
  let origin = setter === undefined ? fileOrigin : `environment variable ${setter[0]}`;
  let named = setter === undefined ? [] : [setter[0]];
  const value = getPath(sources.raw, path);
  if (setter === undefined && !overridden && path.length > 0 && (value === undefined || isObject(value))) {
    const object = value === undefined ? path.slice(0, -1) : path;
    named = object.length === 0 ? [] : set.filter(([, from]) => isUnder(object, from)).map(([name]) => name);
    if (named.length > 0) {
      const variables = `environment variable${named.length > 1 ? 's' : ''} ${named.join(', ')}`;
      origin = sources.fromFile !== undefined && getPath(sources.fromFile, object) !== undefined ? `${fileOrigin} and ${variables}` : variables;
    }
  }
  const wouldSet = value === undefined ? sources.variables.find(([, from]) => from.join('.') === path.join('.'))?.[0] : undefined;
  return `${origin}: '${path.join('.') || '(root)'}'${wouldSet !== undefined && !named.includes(wouldSet) ? ` (${wouldSet})` : ''}`;
}
