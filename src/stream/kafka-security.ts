import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { z } from 'zod';
import { CuilinkError, InputError } from '../kb/errors.ts';
import { asBool, asString, setPath, type EnvVar } from './env-vars.ts';

/**
 * Kafka TLS and SASL settings: their schemas, the CUILINK_* variables that set them, and their
 * resolution into client options at start. Certificate, key, password and secret files are read
 * and checked when the client is built (a missing file, a PEM that does not parse, a certificate
 * that is not the key's: one line naming the field or variable and the file); the OAUTHBEARER
 * token is fetched from the OIDC token endpoint (client-credentials grant) when a connection
 * authenticates, and cached until shortly before it expires.
 */

const filePath = z.string().min(1, 'a file path is required');

export const kafkaTlsSchema = z.union([
  z.boolean(),
  z
    .object({
      /** PEM CA bundle the broker's certificate must chain to (default: Node's CAs). */
      caFile: filePath.optional(),
      /** PEM client certificate (chain) for brokers that require client certificates; with keyFile. */
      certFile: filePath.optional(),
      /** PEM private key of certFile (PKCS#8, PKCS#1 or SEC1; encrypted with keyPassphraseFile). */
      keyFile: filePath.optional(),
      keyPassphraseFile: filePath.optional(),
      /** Name the broker certificate must carry (and SNI) when it is not the broker address's host. */
      servername: z.string().min(1).optional(),
      /** false accepts any broker certificate: for tests only. */
      rejectUnauthorized: z.boolean().optional(),
      /** Inline PEM (compatibility with the earlier Node TLS options); the *File fields are preferred. */
      ca: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
      cert: z.string().min(1).optional(),
      key: z.string().min(1).optional(),
      passphrase: z.string().optional(),
    })
    .strict()
    .superRefine((tls, ctx) => {
      for (const [inline, file] of [['ca', 'caFile'], ['cert', 'certFile'], ['key', 'keyFile'], ['passphrase', 'keyPassphraseFile']] as const) {
        if (tls[inline] !== undefined && tls[file] !== undefined) ctx.addIssue({ code: 'custom', path: [inline], message: `give ${inline} or ${file}, not both` });
      }
      const hasCert = tls.cert !== undefined || tls.certFile !== undefined;
      const hasKey = tls.key !== undefined || tls.keyFile !== undefined;
      if (hasCert && !hasKey) ctx.addIssue({ code: 'custom', path: [tls.certFile !== undefined ? 'certFile' : 'cert'], message: 'a client certificate needs its key (keyFile)' });
      if (hasKey && !hasCert) ctx.addIssue({ code: 'custom', path: [tls.keyFile !== undefined ? 'keyFile' : 'key'], message: 'a client key needs its certificate (certFile)' });
    }),
]);

const passwordSaslSchema = z
  .object({
    mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']),
    username: z.string().min(1),
    password: z.string().optional(),
    /** File holding the password (a trailing newline is dropped), e.g. a mounted Secret. */
    passwordFile: filePath.optional(),
  })
  .strict();

const oauthSaslSchema = z
  .object({
    mechanism: z.literal('oauthbearer'),
    /** OIDC token endpoint; the client-credentials grant is POSTed there. */
    tokenEndpoint: z.string().url().regex(/^https?:\/\//i, 'an http(s) URL'),
    clientId: z.string().min(1),
    clientSecret: z.string().min(1).optional(),
    clientSecretFile: filePath.optional(),
    /** Space-separated scopes to ask for. */
    scope: z.string().min(1).optional(),
  })
  .strict();

export const kafkaSaslSchema = z.discriminatedUnion('mechanism', [passwordSaslSchema, oauthSaslSchema]).superRefine((sasl, ctx) => {
  const [inline, file] = sasl.mechanism === 'oauthbearer' ? (['clientSecret', 'clientSecretFile'] as const) : (['password', 'passwordFile'] as const);
  const given = [inline, file].filter((k) => (sasl as Record<string, unknown>)[k] !== undefined);
  if (given.length !== 1) ctx.addIssue({ code: 'custom', path: [inline], message: given.length === 0 ? `${inline} or ${file} is required` : `give ${inline} or ${file}, not both` });
});

export type KafkaTlsConfig = z.output<typeof kafkaTlsSchema>;
export type KafkaSaslConfig = z.output<typeof kafkaSaslSchema>;

/**
 * Environment variable → connection config path, for the stage (stage-config.ts ENV_VARS) and the
 * Kafka tools (src/cli/kafka-flags.ts). A TLS file variable turns TLS on. docs/security.md.
 */
export const KAFKA_SECURITY_ENV_VARS: EnvVar[] = [
  ['CUILINK_SSL', ['ssl'], asBool],
  ['CUILINK_KAFKA_TLS_CA_FILE', ['ssl', 'caFile'], asString],
  ['CUILINK_KAFKA_TLS_CERT_FILE', ['ssl', 'certFile'], asString],
  ['CUILINK_KAFKA_TLS_KEY_FILE', ['ssl', 'keyFile'], asString],
  ['CUILINK_KAFKA_TLS_KEY_PASSPHRASE_FILE', ['ssl', 'keyPassphraseFile'], asString],
  ['CUILINK_KAFKA_TLS_SERVERNAME', ['ssl', 'servername'], asString],
  ['CUILINK_SASL_MECHANISM', ['sasl', 'mechanism'], asString],
  ['CUILINK_SASL_USERNAME', ['sasl', 'username'], asString],
  ['CUILINK_SASL_PASSWORD', ['sasl', 'password'], asString],
  ['CUILINK_SASL_PASSWORD_FILE', ['sasl', 'passwordFile'], asString],
  ['CUILINK_SASL_OAUTH_TOKEN_ENDPOINT', ['sasl', 'tokenEndpoint'], asString],
  ['CUILINK_SASL_OAUTH_CLIENT_ID', ['sasl', 'clientId'], asString],
  ['CUILINK_SASL_OAUTH_CLIENT_SECRET', ['sasl', 'clientSecret'], asString],
  ['CUILINK_SASL_OAUTH_CLIENT_SECRET_FILE', ['sasl', 'clientSecretFile'], asString],
  ['CUILINK_SASL_OAUTH_SCOPE', ['sasl', 'scope'], asString],
];

/**
 * `ssl` and `sasl` from the KAFKA_SECURITY_ENV_VARS that are set (later entries win, so a TLS
 * file variable makes CUILINK_SSL=true an object), and which variable set each field.
 */
export function kafkaSecurityFromEnv(env: NodeJS.ProcessEnv): { config: { ssl?: unknown; sasl?: unknown }; variables: Map<string, string> } {
  const config: Record<string, unknown> = {};
  const variables = new Map<string, string>();
  for (const [variable, path, parse] of KAFKA_SECURITY_ENV_VARS) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    setPath(config, path, parse(value));
    variables.set(path.join('.'), variable);
  }
  return { config, variables };
}

/**
 * Why CUILINK_SSL=false cannot stand beside a TLS file variable, or undefined: the file variable
 * makes `ssl` an object, which turns TLS on against the explicit `false`.
 */
export function tlsVariablesConflict(env: NodeJS.ProcessEnv): string | undefined {
  const ssl = env.CUILINK_SSL;
  if (ssl === undefined || asBool(ssl) !== false) return undefined;
  const onVariables = KAFKA_SECURITY_ENV_VARS.filter(([variable, path]) => path[0] === 'ssl' && path.length > 1 && env[variable] !== undefined && env[variable] !== '').map(([variable]) => variable);
  if (onVariables.length === 0) return undefined;
  return `environment variable CUILINK_SSL=${ssl} turns TLS off, and ${onVariables.join(', ')} turn${onVariables.length > 1 ? '' : 's'} it on: unset one`;
}

/** How a config field is named in an error: 'environment variable CUILINK_KAFKA_TLS_CA_FILE', "config stage.json: 'ssl.caFile'"… */
export type FieldNamer = (path: string) => string;
export const connectionFieldName: FieldNamer = (path) => `Kafka connection '${path}'`;

/** A file or PEM problem of one config field: `path` like 'ssl.caFile', `problem` one line that names the file. */
class SecurityIssue extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

/** Runs `resolve`, turning a SecurityIssue into one InputError line naming the field (via `name`) and the file. */
function named<T>(name: FieldNamer, resolve: () => T): T {
  try {
    return resolve();
  } catch (error) {
    if (error instanceof SecurityIssue) throw new InputError(oneLine(`${name(error.path)}: ${error.problem}`), 'INVALID_CONFIG');
    throw error;
  }
}

/** A zod refinement that reads and checks the files of an `ssl` or `sasl` value, reporting a problem on its field. */
function fileIssues<T>(resolve: (value: T) => unknown): (value: T, ctx: z.RefinementCtx) => void {
  return (value, ctx) => {
    try {
      resolve(value);
    } catch (error) {
      if (!(error instanceof SecurityIssue)) throw error;
      ctx.addIssue({ code: 'custom', path: error.path.split('.').slice(1), message: oneLine(error.problem) });
    }
  };
}

/** The TLS and SASL options of the Kafka client (shaped as @platformatic/kafka's `tls` and `sasl`). */
export interface ResolvedKafkaSecurity {
  tls?: ConnectionOptions;
  sasl?: {
    mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER';
    username?: string;
    password?: string;
    token?: () => Promise<string>;
  };
}

const SASL_MECHANISMS = { plain: 'PLAIN', 'scram-sha-256': 'SCRAM-SHA-256', 'scram-sha-512': 'SCRAM-SHA-512', oauthbearer: 'OAUTHBEARER' } as const;

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

const READ_ERRORS: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'is a directory', ENOTDIR: 'a path component is not a directory', EPERM: 'permission denied' };

function readConfigFile(field: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new SecurityIssue(field, `cannot read ${path} (${(code !== undefined ? READ_ERRORS[code] : undefined) ?? code ?? (error as Error).message})`);
  }
}

/** A secret file (password, client secret, passphrase): its text without the trailing newline editors and `echo` add. */
function readSecretFile(field: string, path: string): string {
  const value = readConfigFile(field, path).replace(/\r?\n$/, '');
  if (value === '') throw new SecurityIssue(field, `${path} is empty`);
  return value;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Parses every certificate of a PEM bundle; returns them in order (the first is the leaf of a chain). */
function parseCertificates(field: string, where: string, pem: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new SecurityIssue(field, `${where} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new SecurityIssue(field, `${where}: certificate ${i + 1} of ${blocks.length} does not parse (${(error as Error).message})`);
    }
  });
}

function parsePrivateKey(field: string, where: string, pem: string, passphrase: string | undefined): KeyObject {
  const encrypted = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem);
  if (encrypted && passphrase === undefined) throw new SecurityIssue(field, `${where} is an encrypted key: give its passphrase (ssl.keyPassphraseFile, CUILINK_KAFKA_TLS_KEY_PASSPHRASE_FILE)`);
  try {
    return createPrivateKey(passphrase === undefined ? { key: pem, format: 'pem' } : { key: pem, format: 'pem', passphrase });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_MISSING_PASSPHRASE') throw new SecurityIssue(field, `${where} is an encrypted key: give its passphrase (ssl.keyPassphraseFile, CUILINK_KAFKA_TLS_KEY_PASSPHRASE_FILE)`);
    // A wrong passphrase usually fails the padding ("bad decrypt"); about one time in 256 the padding passes and the
    // garbage fails to decode instead: with a passphrase given, an encrypted key that does not open is that case either way.
    if (encrypted) throw new SecurityIssue(field, `${where} does not decrypt with the given passphrase`);
    throw new SecurityIssue(field, `${where} is not a PEM private key (${(error as Error).message})`);
  }
}

/**
 * Node TLS options from the config, reading and checking the files: every certificate parses, the
 * client certificate is in date and is the key's. Throws an InputError of one line naming the
 * field (via `name`) and the file.
 */
export function resolveTls(ssl: KafkaTlsConfig | undefined, name: FieldNamer = connectionFieldName): ConnectionOptions | undefined {
  return named(name, () => readTls(ssl));
}

/** The SASL options, reading password and secret files; OAUTHBEARER gets a caching token provider (nothing is fetched yet). */
export function resolveSasl(sasl: KafkaSaslConfig | undefined, name: FieldNamer = connectionFieldName, requestTimeoutMs = 30_000): ResolvedKafkaSecurity['sasl'] {
  return named(name, () => readSasl(sasl, requestTimeoutMs));
}

/** `kafkaTlsSchema` that also reads and checks the files (a problem is an issue on its field, e.g. `ssl.caFile`). */
export const checkedKafkaTlsSchema = kafkaTlsSchema.superRefine(fileIssues(readTls));
/** `kafkaSaslSchema` that also reads the password or client-secret file. */
export const checkedKafkaSaslSchema = kafkaSaslSchema.superRefine(fileIssues((sasl: KafkaSaslConfig) => readSasl(sasl, 30_000)));

function readTls(ssl: KafkaTlsConfig | undefined): ConnectionOptions | undefined {
  if (ssl === undefined || ssl === false) return undefined;
  if (ssl === true) return {};
  const tls: ConnectionOptions = {};
  const source = (inline: 'ca' | 'cert' | 'key', file: 'caFile' | 'certFile' | 'keyFile'): { field: string; where: string; pem: string } | undefined => {
    const path = ssl[file];
    if (path !== undefined) return { field: `ssl.${file}`, where: path, pem: readConfigFile(`ssl.${file}`, path) };
    const value = ssl[inline];
    if (value === undefined) return undefined;
    return { field: `ssl.${inline}`, where: 'the inline PEM', pem: Array.isArray(value) ? value.join('\n') : value };
  };
  const ca = source('ca', 'caFile');
  if (ca !== undefined) {
    parseCertificates(ca.field, ca.where, ca.pem);
    tls.ca = ca.pem;
  }
  const cert = source('cert', 'certFile');
  const key = source('key', 'keyFile');
  if (cert !== undefined && key !== undefined) {
    const passphrase = ssl.keyPassphraseFile !== undefined ? readSecretFile('ssl.keyPassphraseFile', ssl.keyPassphraseFile) : ssl.passphrase;
    const [leaf] = parseCertificates(cert.field, cert.where, cert.pem);
    const privateKey = parsePrivateKey(key.field, key.where, key.pem, passphrase);
    if (!leaf!.checkPrivateKey(privateKey)) throw new SecurityIssue(cert.field, `${cert.where} is not the certificate of ${key.field} ${key.where} (their public keys differ)`);
    if (Date.parse(leaf!.validTo) < Date.now()) throw new SecurityIssue(cert.field, `${cert.where}: the client certificate expired on ${leaf!.validTo}`);
    tls.cert = cert.pem;
    tls.key = key.pem;
    if (passphrase !== undefined) tls.passphrase = passphrase;
  }
  if (ssl.servername !== undefined) tls.servername = ssl.servername;
  if (ssl.rejectUnauthorized !== undefined) tls.rejectUnauthorized = ssl.rejectUnauthorized;
  return tls;
}

function readSasl(sasl: KafkaSaslConfig | undefined, requestTimeoutMs: number): ResolvedKafkaSecurity['sasl'] {
  if (sasl === undefined) return undefined;
  if (sasl.mechanism === 'oauthbearer') {
    const clientSecret = sasl.clientSecretFile !== undefined ? readSecretFile('sasl.clientSecretFile', sasl.clientSecretFile) : sasl.clientSecret!;
    const provider = new OidcTokenProvider({ tokenEndpoint: sasl.tokenEndpoint, clientId: sasl.clientId, clientSecret, scope: sasl.scope, timeoutMs: Math.min(requestTimeoutMs, 30_000) });
    return { mechanism: 'OAUTHBEARER', token: () => provider.token() };
  }
  const password = sasl.passwordFile !== undefined ? readSecretFile('sasl.passwordFile', sasl.passwordFile) : sasl.password!;
  return { mechanism: SASL_MECHANISMS[sasl.mechanism], username: sasl.username, password };
}

export interface OidcClientCredentials {
  tokenEndpoint: string;
  clientId: string;
  clientSecret: string;
  scope?: string | undefined;
  /** Per token request (default 10 s). */
  timeoutMs?: number;
  /** For tests. */
  now?: () => number;
}

/** A token is fetched again this long before it expires (or at 80% of a short lifetime). */
const REFRESH_MARGIN_MS = 60_000;

/**
 * OAuth 2.0 client-credentials grant (RFC 6749 §4.4) against an OIDC token endpoint: POST
 * `grant_type=client_credentials[&scope=…]` as a form, the client authenticated by HTTP Basic
 * (as Kafka's own OAuthBearerLoginCallbackHandler does). The token is cached until shortly before
 * `expires_in` (or the JWT's `exp`); concurrent connections share one request. An answer other
 * than 2xx, or one without `access_token`, is a CuilinkError with one line naming the endpoint.
 */
export class OidcTokenProvider {
  private cached: { token: string; refreshAt: number } | undefined;
  private inFlight: Promise<string> | undefined;
  /** Token requests sent (for tests and logs). */
  fetches = 0;

  constructor(private readonly options: OidcClientCredentials) {}

  token(): Promise<string> {
    const now = (this.options.now ?? Date.now)();
    if (this.cached !== undefined && now < this.cached.refreshAt) return Promise.resolve(this.cached.token);
    this.inFlight ??= this.fetchToken().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async fetchToken(): Promise<string> {
    const { tokenEndpoint, clientId, clientSecret, scope } = this.options;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (scope !== undefined) form.set('scope', scope);
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    const where = `OAuth token endpoint ${tokenEndpoint}`;
    this.fetches++;
    let response: Response;
    try {
      response = await fetch(tokenEndpoint, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = (error as Error).name === 'TimeoutError' ? 'timed out' : (cause?.code ?? cause?.message ?? (error as Error).message);
      throw new CuilinkError('OAUTH_TOKEN_UNAVAILABLE', oneLine(`${where}: request failed (${reason})`), { retriable: true, cause: error });
    }
    const text = await response.text().catch(() => '');
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>;
    } catch {
      // Not JSON: described below by status alone.
    }
    if (!response.ok) {
      const detail = [body.error, body.error_description].filter((v) => typeof v === 'string').join(': ') || text.slice(0, 120);
      // 4xx: the credentials or the request are wrong, asking again will not help; 5xx may pass.
      throw new CuilinkError('OAUTH_TOKEN_REFUSED', oneLine(`${where} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${detail ? `: ${detail}` : ''}`), { retriable: response.status >= 500 });
    }
    const token = body.access_token;
    if (typeof token !== 'string' || token === '') throw new CuilinkError('OAUTH_TOKEN_REFUSED', `${where} answered ${response.status} without an access_token`);
    const now = (this.options.now ?? Date.now)();
    const lifetimeMs = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : jwtLifetimeMs(token, now);
    if (lifetimeMs !== undefined) this.cached = { token, refreshAt: now + lifetimeMs - Math.min(REFRESH_MARGIN_MS, lifetimeMs * 0.2) };
    else this.cached = undefined;
    return token;
  }
}

/** Milliseconds until a JWT's `exp`, or undefined when the token is not a JWT with one. */
function jwtLifetimeMs(token: string, now: number): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && exp * 1000 > now ? exp * 1000 - now : undefined;
  } catch {
    return undefined;
  }
}
