import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { z } from 'zod';
import { InputError } from '../../kb/errors.ts';
import { asBool, asString, setPath, type EnvVar } from '../env-vars.ts';
import type { SchemaRegistryOptions } from './confluent-avro-codec.ts';

/**
 * The `schemaRegistry` section of the stage config (src/stream/stage-config.ts) and the
 * environment variables of the Kafka tools (src/cli/kafka-flags.ts): where the Confluent wire
 * format's registry is, how cuilink authenticates to it and checks its certificate, and which
 * subject a schema is registered under. Secrets and PEM files are read and checked once at start
 * (resolveSchemaRegistry); each bad one is a one-line InputError naming the field and the file.
 * docs/stream-formats.md ("Schema Registry") lists the options; keep the two in step.
 */

/**
 * Subject a schema is registered under (Confluent's subject name strategies):
 * `topic` `<topic>-value`, `record` `<namespace.Name>`, `topic-record` `<topic>-<namespace.Name>`.
 */
export const SUBJECT_NAME_STRATEGIES = ['topic', 'record', 'topic-record'] as const;
export type SubjectNameStrategy = (typeof SUBJECT_NAME_STRATEGIES)[number];

const nonEmpty = z.string().min(1);

export const schemaRegistrySectionSchema = z
  .object({
    /** http(s)://host:port[/path]; required when avro.wireFormat is confluent. */
    url: z
      .string()
      .url()
      .regex(/^https?:\/\//i, 'an http:// or https:// URL')
      .optional(),
    /** One of basic (username + password or passwordFile) or bearer (token or tokenFile). */
    auth: z
      .object({
        basic: z.object({ username: nonEmpty, password: nonEmpty.optional(), passwordFile: nonEmpty.optional() }).strict().optional(),
        bearer: z.object({ token: nonEmpty.optional(), tokenFile: nonEmpty.optional() }).strict().optional(),
      })
      .strict()
      .optional(),
    /** https only: PEM files; the system CAs when caFile is absent. */
    tls: z
      .object({
        caFile: nonEmpty.optional(),
        certFile: nonEmpty.optional(),
        keyFile: nonEmpty.optional(),
        /** false accepts any certificate (tests only). */
        rejectUnauthorized: z.boolean().default(true),
      })
      .strict()
      .optional(),
    subjectNameStrategy: z.enum(SUBJECT_NAME_STRATEGIES).default('topic'),
  })
  .strict()
  .superRefine((section, ctx) => {
    const issue = (path: string[], message: string): void => ctx.addIssue({ code: 'custom', path, message });
    const { auth, tls } = section;
    if (auth !== undefined) {
      if (auth.basic !== undefined && auth.bearer !== undefined) issue(['auth'], 'set basic or bearer, not both');
      else if (auth.basic === undefined && auth.bearer === undefined) issue(['auth'], 'set basic { username, password | passwordFile } or bearer { token | tokenFile }');
      if (auth.basic !== undefined && (auth.basic.password === undefined) === (auth.basic.passwordFile === undefined)) issue(['auth', 'basic'], 'set one of password and passwordFile');
      if (auth.bearer !== undefined && (auth.bearer.token === undefined) === (auth.bearer.tokenFile === undefined)) issue(['auth', 'bearer'], 'set one of token and tokenFile');
    }
    if (tls !== undefined) {
      if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) issue(['tls', tls.certFile === undefined ? 'certFile' : 'keyFile'], 'certFile and keyFile go together (a client certificate and its key)');
      if (section.url !== undefined && !/^https:/i.test(section.url)) issue(['tls'], `set, but url ${section.url} is not https`);
    }
  });

export type SchemaRegistrySection = z.output<typeof schemaRegistrySectionSchema>;

/** Environment variable → path under `schemaRegistry`. */
export const SCHEMA_REGISTRY_ENV_VARS: EnvVar[] = [
  ['CUILINK_SCHEMA_REGISTRY_URL', ['url'], asString],
  ['CUILINK_SCHEMA_REGISTRY_USERNAME', ['auth', 'basic', 'username'], asString],
  ['CUILINK_SCHEMA_REGISTRY_PASSWORD', ['auth', 'basic', 'password'], asString],
  ['CUILINK_SCHEMA_REGISTRY_PASSWORD_FILE', ['auth', 'basic', 'passwordFile'], asString],
  ['CUILINK_SCHEMA_REGISTRY_BEARER_TOKEN', ['auth', 'bearer', 'token'], asString],
  ['CUILINK_SCHEMA_REGISTRY_BEARER_TOKEN_FILE', ['auth', 'bearer', 'tokenFile'], asString],
  ['CUILINK_SCHEMA_REGISTRY_CA_FILE', ['tls', 'caFile'], asString],
  ['CUILINK_SCHEMA_REGISTRY_CERT_FILE', ['tls', 'certFile'], asString],
  ['CUILINK_SCHEMA_REGISTRY_KEY_FILE', ['tls', 'keyFile'], asString],
  ['CUILINK_SCHEMA_REGISTRY_TLS_REJECT_UNAUTHORIZED', ['tls', 'rejectUnauthorized'], asBool],
  ['CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY', ['subjectNameStrategy'], asString],
];

/** A secret file's contents without its trailing newline; a one-line error naming `field` and the path otherwise. */
function readSecret(field: string, path: string): string {
  const text = readText(field, path).replace(/\r?\n$/, '');
  if (text === '') throw new InputError(`${field}: ${path} is empty`, 'BAD_CONFIG');
  if (/[\r\n]/.test(text)) throw new InputError(`${field}: ${path} holds more than one line`, 'BAD_CONFIG');
  return text;
}

function readText(field: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(`${field}: cannot read ${path} (${code ?? (error as Error).message})`, 'BAD_CONFIG', error);
  }
}

function readCertificates(field: string, path: string): string {
  const pem = readText(field, path);
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new InputError(`${field}: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`, 'BAD_CONFIG');
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (error) {
      throw new InputError(`${field}: ${path}: certificate ${i + 1} is not readable (${(error as Error).message})`, 'BAD_CONFIG', error);
    }
  }
  return pem;
}

function readPrivateKey(field: string, path: string): string {
  const pem = readText(field, path);
  try {
    createPrivateKey(pem);
  } catch (error) {
    throw new InputError(`${field}: ${path} holds no readable unencrypted PEM private key (${(error as Error).message})`, 'BAD_CONFIG', error);
  }
  return pem;
}

/**
 * The codec's options from a validated section, its files read and checked (`prefix` names the
 * fields in errors: `schemaRegistry` in the stage config). undefined without a url.
 */
export function resolveSchemaRegistry(section: SchemaRegistrySection, prefix = 'schemaRegistry', names: Partial<Record<string, string>> = {}): SchemaRegistryOptions | undefined {
  if (section.url === undefined) return undefined;
  const field = (path: string): string => names[path] ?? `${prefix}.${path}`;
  const options: SchemaRegistryOptions = { url: section.url, subjectNameStrategy: section.subjectNameStrategy };
  const { basic, bearer } = section.auth ?? {};
  if (basic !== undefined) {
    options.auth = { basic: { username: basic.username, password: basic.password ?? readSecret(field('auth.basic.passwordFile'), basic.passwordFile!) } };
  } else if (bearer !== undefined) {
    options.auth = { bearer: { token: bearer.token ?? readSecret(field('auth.bearer.tokenFile'), bearer.tokenFile!) } };
  }
  const tls = section.tls;
  if (tls !== undefined) {
    const resolved: NonNullable<SchemaRegistryOptions['tls']> = { rejectUnauthorized: tls.rejectUnauthorized };
    if (tls.caFile !== undefined) resolved.ca = readCertificates(field('tls.caFile'), tls.caFile);
    if (tls.certFile !== undefined) resolved.cert = readCertificates(field('tls.certFile'), tls.certFile);
    if (tls.keyFile !== undefined) resolved.key = readPrivateKey(field('tls.keyFile'), tls.keyFile);
    if (resolved.cert !== undefined && resolved.key !== undefined) {
      try {
        createSecureContext({ cert: resolved.cert, key: resolved.key });
      } catch (error) {
        throw new InputError(`${field('tls.keyFile')}: ${tls.keyFile} is not the key of ${field('tls.certFile')} ${tls.certFile} (${(error as Error).message})`, 'BAD_CONFIG', error);
      }
    }
    options.tls = resolved;
  }
  return options;
}

/**
 * The registry options of the Kafka tools (`evaluator`, `gold-sample`, ...): `--schema-registry`
 * or CUILINK_SCHEMA_REGISTRY_URL, the rest from the CUILINK_SCHEMA_REGISTRY_* variables. Errors
 * name the flag or the variable.
 */
export function schemaRegistryFromEnv(env: NodeJS.ProcessEnv, urlFlag?: string): SchemaRegistryOptions | undefined {
  const raw: Record<string, unknown> = {};
  const names: Record<string, string> = {};
  for (const [name, path, parse] of SCHEMA_REGISTRY_ENV_VARS) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    setPath(raw, path, parse(value));
    names[path.join('.')] = name;
  }
  if (urlFlag !== undefined) {
    raw.url = urlFlag;
    names.url = '--schema-registry';
  }
  if (raw.url === undefined) {
    const stray = Object.values(names);
    if (stray.length > 0) throw new InputError(`${stray.join(', ')} set without a registry URL: pass --schema-registry URL or set CUILINK_SCHEMA_REGISTRY_URL`, 'BAD_FLAGS');
    return undefined;
  }
  const parsed = schemaRegistrySectionSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.join('.');
    const from = Object.entries(names).filter(([path]) => path.startsWith(`${where}.`)).map(([, name]) => name);
    const named = names[where] ?? `schemaRegistry.${where}${from.length > 0 ? ` (from ${from.join(', ')})` : ''}`;
    throw new InputError(`${named}: ${issue.message}`, 'BAD_FLAGS');
  }
  return resolveSchemaRegistry(parsed.data, 'schemaRegistry', names);
}
