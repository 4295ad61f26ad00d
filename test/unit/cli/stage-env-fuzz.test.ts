import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kafkaRequest } from '../../../src/cli/kafka-flags.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { getPath } from '../../../src/stream/env-vars.ts';
import { ENV_VARS, loadStageConfig, type StageConfig } from '../../../src/stream/stage-config.ts';
import { fuzzPlan, int, pick, guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';

// The product rule for the settings of `cuilink run` (docs/stream.md "Configuration"): a bad value
// stops the start with a clear error naming the key and where it came from (exit 2), never another
// error, and a value it takes means what it says. Seeded sets of CUILINK_* variables (every one the
// stage reads, the Kafka TLS, SASL and schema-registry ones among them: numbers with trailing text,
// signs, exponents, past 2^31 and 2^53; booleans of other words; topics and URLs that are none;
// paths to nothing, a directory, an empty file) go, alone or over a valid `--config` file (itself
// sometimes given an out-of-range number or an unknown key), through loadStageConfig, and some
// through the Kafka tools' reader of the same variables (kafkaRequest). A refusal must be an
// InputError that names the variable that set the refused key (or, for a key no variable set,
// one that was set, the variable that would set it, or the file); a load must hold each variable's
// value as written, every duration must fit a timer (2^31 - 1 ms: Node fires a longer one at once)
// and every Kafka protocol int32 must fit one, and an unknown key in the file must have been
// refused. It found durations past 2^31 ms taken (a drain timeout of 99999999999 fired at once),
// CUILINK_BROKERS's bad broker blamed on the config file, keys missing beside set variables
// refused naming no variable, CUILINK_SSL=false turned into TLS by a TLS file variable, and the
// tools refusing an empty CUILINK_SCHEMA_REGISTRY_URL the stage reads as unset (regression tests:
// test/unit/stream/stage-config.test.ts, kafka-security.test.ts, schema-registry-config.test.ts).
// The link-config file and generic mutations of the stage file are fuzzed by config-input-fuzz.test.ts. A failure names seed, case and what was set; rerun it alone with
// CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_206, 17, 9_001], 700);
const INT32_MAX = 2 ** 31 - 1;

/** Durations that become timers, and sizes the Kafka protocol carries as int32: past INT32_MAX they silently mean something else. */
const INT32_PATHS = [
  'batching.maxWaitMs',
  'transactionTimeoutMs',
  'consumer.sessionTimeoutMs',
  'consumer.heartbeatIntervalMs',
  'consumer.maxBytesPerPartition',
  'retry.initialBackoffMs',
  'retry.maxBackoffMs',
  'drainTimeoutMs',
  'health.probeIntervalMs',
  'telemetry.metricExportIntervalMs',
  'linker.memoryPollMs',
].map((p) => p.split('.'));

/** A valid config file with every section written out, and the topics the `review.*` and `labels.*` settings act through. */
const STAGE_FILE = loadStageConfig({ env: { CUILINK_BROKERS: 'kafka:9092', CUILINK_REVIEW_TOPIC: 'cuilink.review', CUILINK_LABEL_TOPIC: 'cuilink.labels', CUILINK_MEASURE_TOPIC: 'cuilink.measure' } });

/** What a variable's text is read as, told from its parser's answers (the parsers are the product's own). */
type Kind = 'int' | 'number' | 'bool' | 'brokers' | 'false-or-string' | 'string';
function kindOf(parse: (text: string) => unknown): Kind {
  if (Array.isArray(parse('a:1,b:2'))) return 'brokers';
  if (parse('true') === true) return 'bool';
  if (parse('none') === false) return 'false-or-string';
  if (parse('12') === 12) return parse('1.5') === 1.5 ? 'number' : 'int';
  return 'string';
}

const VARIABLES = ENV_VARS.map(([name, path, parse]) => ({ name, path, kind: kindOf(parse) }));

const NUMBERS = ['0', '1', '-1', '-0', '7', ' 10 ', '10abc', '1e3', '0x10', '1.5', '.5', '1.', '+5', 'NaN', 'Infinity', '1_000', '2147483647', '2147483648', '99999999999', '9007199254740993', '123456789012345678901234'];
const BOOLS = ['true', 'false', 'TRUE', 'yes', 'no', 'on', 'off', '1', '0', 'maybe', ' true', 'none'];
const WORDS = [' ', 'x', 'a b', 'none', 'false', 'cuilink.notes', 'cuilink.review', 'x'.repeat(250), 'é', '\u0000', 'kafka:9092', 'bad host:1', 'a:1,b', ',,', 'http://registry:8081', 'https://registry', 'ftp://x', 'not a url', 'exactly-once', 'debug', 'cuda', 'fp16', 'plain', 'confluent', 'scram-sha-512', 'oauthbearer', 'PLAIN', 'record', 'é'.repeat(100_000)];

/** A value for `kind`: mostly of its own sort, sometimes of another. */
function valueFor(random: () => number, kind: Kind, files: string[]): string {
  const own = kind === 'int' || kind === 'number' ? NUMBERS : kind === 'bool' ? BOOLS : [...WORDS, ...files];
  return int(random, 4) === 0 ? pick(random, [...NUMBERS, ...BOOLS, ...WORDS, ...files]) : pick(random, own);
}

/** What the text means as its variable's kind, or undefined where it means nothing of that kind (it must then be refused). */
function meaning(kind: Kind, text: string): unknown {
  const trimmed = text.trim();
  if (kind === 'int') return /^-?\d+$/.test(trimmed) ? Number(trimmed) : undefined;
  if (kind === 'number') return /^-?\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : undefined;
  if (kind === 'bool') return /^(1|true|yes|on)$/i.test(text) ? true : /^(0|false|no|off)$/i.test(text) ? false : undefined;
  if (kind === 'brokers') return text.split(',').map((b) => b.trim()).filter((b) => b !== '');
  if (kind === 'false-or-string') return text === 'none' ? false : text;
  return text;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why a loaded config does not hold what it was given, or undefined. */
function loadedProblem(config: StageConfig, env: Record<string, string>, unknownKey: string | undefined): string | undefined {
  if (unknownKey !== undefined) return `loaded, the file's unknown key ${unknownKey} ignored`;
  const set = VARIABLES.filter((v) => env[v.name] !== undefined && env[v.name] !== '');
  for (const { name, path, kind } of set) {
    const loaded = getPath(config as unknown as Record<string, unknown>, path);
    // A later variable that writes below this one's path makes an object of it (CUILINK_SSL=true, then a TLS file variable).
    const overwritten = set.some((other) => other.path.length > path.length && path.every((key, i) => other.path[i] === key));
    const expected = meaning(kind, env[name]!);
    if (overwritten) {
      if (expected === false) return `loaded with ${name}=${JSON.stringify(env[name])} turned into ${JSON.stringify(loaded)} by a variable under '${path.join('.')}'`;
      continue;
    }
    if (expected === undefined) return `loaded with ${name}=${JSON.stringify(env[name]!.slice(0, 40))} as ${JSON.stringify(loaded)}: no ${kind} was written`;
    if (JSON.stringify(loaded) !== JSON.stringify(expected)) return `loaded with ${name}=${JSON.stringify(env[name]!.slice(0, 40))} as ${JSON.stringify(loaded)}, not ${JSON.stringify(expected)}`;
  }
  for (const path of INT32_PATHS) {
    const value = getPath(config as unknown as Record<string, unknown>, path);
    if (typeof value === 'number' && !(value >= 0 && value <= INT32_MAX)) return `loaded with '${path.join('.')}' ${value}: past ${INT32_MAX}, a timer fires at once and Kafka cannot carry it`;
  }
  return undefined;
}

/**
 * Why a refusal does not say where the bad value came from, or undefined. The key it refuses is
 * its first quoted path; the variable that set it, or an object above it, must be named.
 */
function attributionProblem(error: unknown, env: Record<string, string>, file: string | undefined, codes: readonly string[]): string | undefined {
  if (!(error instanceof InputError)) return `not an InputError: ${error instanceof Error ? (error.stack ?? '').split('\n').slice(0, 4).join(' | ') : String(error)}`;
  if (!codes.includes(error.code)) return `code ${error.code}: ${error.message.slice(0, 300)}`;
  const message = error.message;
  const set = VARIABLES.filter((v) => env[v.name] !== undefined && env[v.name] !== '');
  const where = /'([^']+)'/.exec(message)?.[1] ?? '';
  const refused = where.split('.');
  const setters = set.filter((v) => v.path.every((key, i) => refused[i] === key)).sort((a, b) => b.path.length - a.path.length);
  if (setters.length > 0) return message.includes(setters[0]!.name) ? undefined : `'${where}' was set by ${setters[0]!.name}, and the refusal does not name it: ${message.slice(0, 300)}`;
  const wouldSet = VARIABLES.find((v) => v.path.join('.') === where)?.name;
  if (set.some((v) => message.includes(v.name)) || (wouldSet !== undefined && message.includes(wouldSet)) || (file !== undefined && message.includes(file))) return undefined;
  return `names no variable that was set${file === undefined ? '' : ' and not the file'}: ${message.slice(0, 300)}`;
}

function buildCase(random: () => number, _index: number, dir: string): FuzzCase {
  const files = [join(dir, 'missing'), dir, join(dir, 'empty'), join(dir, 'secret'), join(dir, 'not-pem'), ''];
  writeFileSync(files[2]!, '');
  writeFileSync(files[3]!, 's3cret\n');
  writeFileSync(files[4]!, 'hello\n');
  const env: Record<string, string> = int(random, 2) === 0 ? { CUILINK_BROKERS: 'kafka:9092', CUILINK_REVIEW_TOPIC: 'cuilink.review', CUILINK_LABEL_TOPIC: 'cuilink.labels', CUILINK_MEASURE_TOPIC: 'cuilink.measure' } : {};
  const changed: string[] = [];
  // Half the cases set variables of one section (ssl, sasl, schemaRegistry, topics...): the ones that make an object together.
  const section = int(random, 2) === 0 ? pick(random, VARIABLES).path[0] : undefined;
  const candidates = VARIABLES.filter((v) => section === undefined || v.path[0] === section);
  for (let n = 1 + int(random, 3); n > 0; n--) {
    const variable = pick(random, candidates);
    env[variable.name] = valueFor(random, variable.kind, files);
    changed.push(`${variable.name}=${JSON.stringify(env[variable.name]!.slice(0, 30))}${env[variable.name]!.length > 30 ? `… (${env[variable.name]!.length} chars)` : ''}`);
  }
  // A third of the cases over a valid --config file; some of those with one number past its range, or an unknown key.
  let file: string | undefined;
  let unknownKey: string | undefined;
  let fileWhat = '';
  if (int(random, 3) === 0) {
    const content = JSON.parse(JSON.stringify(STAGE_FILE)) as Record<string, unknown>;
    const mutation = int(random, 3);
    if (mutation === 1) {
      const path = pick(random, INT32_PATHS);
      const value = pick(random, [INT32_MAX, INT32_MAX + 1, 1e12, 2 ** 53 + 2, 1e300]);
      (getPath(content, path.slice(0, -1)) as Record<string, unknown>)[path.at(-1)!] = value;
      fileWhat = `, file '${path.join('.')}' ${value}`;
    } else if (mutation === 2) {
      const objects = Object.keys(content).filter((k) => isObject(content[k]) && k !== 'link');
      const section = pick(random, ['(root)', ...objects]);
      unknownKey = section === '(root)' ? 'extraSetting' : `${section}.extraSetting`;
      (section === '(root)' ? content : (content[section] as Record<string, unknown>)).extraSetting = 1;
      fileWhat = `, file gets key ${unknownKey}`;
    }
    file = join(dir, 'stage.json');
    writeFileSync(file, JSON.stringify(content));
  }
  const tools = file === undefined && int(random, 4) === 0;
  // The tools need brokers before anything else: without, their refusal says so whatever else is set.
  if (tools && !env.CUILINK_BROKERS) env.CUILINK_BROKERS = 'kafka:9092';
  const what = `${tools ? 'kafka tools' : 'stage'}: ${changed.join(' ')}${file === undefined ? '' : ` over a --config file${fileWhat}`}`;
  const codes = tools ? ['BAD_FLAGS', 'BAD_CONFIG', 'INVALID_CONFIG'] : ['BAD_CONFIG'];
  return {
    what,
    file: '',
    codes,
    run: () => {
      try {
        if (tools) {
          const { connection } = kafkaRequest({}, 'tool', env);
          // The tools read the broker list and the security variables as the stage does.
          return loadedProblem({ ...STAGE_FILE, brokers: connection.brokers, ssl: connection.ssl, sasl: connection.sasl } as StageConfig, Object.fromEntries(Object.entries(env).filter(([name]) => name === 'CUILINK_BROKERS' || /^CUILINK_(SSL|KAFKA_TLS|SASL)/.test(name))), undefined);
        }
        return loadedProblem(loadStageConfig({ file, env }), env, unknownKey);
      } catch (error) {
        // A refusal that names its source goes back up, to be counted as one.
        const problem = attributionProblem(error, env, file, codes);
        if (problem !== undefined) return problem;
        throw error;
      }
    },
  };
}

await guardedFuzzTest('CUILINK_* variables, alone or over a --config file, load as written or are refused naming the variable that set the key', new URL(import.meta.url), PLAN, buildCase);
