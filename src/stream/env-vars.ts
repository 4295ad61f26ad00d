// Environment variables as config: the parsers and the path setter (and getter) of the stage's ENV_VARS
// (stage-config.ts), KAFKA_SECURITY_ENV_VARS (kafka-security.ts) and SCHEMA_REGISTRY_ENV_VARS
// (avro/schema-registry-config.ts).

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
