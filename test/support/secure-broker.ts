import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';

/**
 * A local broker with the listeners a platform team runs: SECURE (SASL_SSL, SCRAM-SHA-512, client
 * certificates required) and OAUTH (SASL_PLAINTEXT, OAUTHBEARER with Kafka's unsecured JWS
 * validator: any unsigned JWT with `sub` and `exp` is accepted). Certificates come from openssl
 * into a temporary directory: a CA, the broker's (SAN 127.0.0.1, localhost), a client's with an
 * encrypted key, and an unrelated CA for the wrong-CA case.
 */

export const SCRAM_USER = { username: 'alice', password: 'alice-secret' };
export const KEY_PASSPHRASE = 'client-key-pass';

export interface TestPki {
  dir: string;
  caFile: string;
  otherCaFile: string;
  clientCertFile: string;
  /** Encrypted (PKCS#8, AES-256) with `passphraseFile`. */
  clientKeyFile: string;
  passphraseFile: string;
  /** Unencrypted PKCS#8 key of another pair: does not match clientCertFile. */
  strayKeyFile: string;
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.error !== undefined || result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.error?.message ?? result.stderr.trim().split('\n')[0]}`);
}

/** True when `openssl` runs (the secure broker tests need it). */
export function hasOpenssl(): boolean {
  const result = spawnSync('openssl', ['version'], { stdio: 'ignore' });
  return result.error === undefined && result.status === 0;
}

export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-pki-'));
  const days = '2';
  const ca = (name: string): void =>
    openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', days, '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  ca('cuilink-test-ca');
  ca('cuilink-other-ca');
  const leaf = (name: string, keyArgs: string[], ext: string): void => {
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', `${name}.key`, ...keyArgs], dir);
    openssl(['req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`, ...(keyArgs.length > 0 ? ['-passin', `pass:${KEY_PASSPHRASE}`] : [])], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'cuilink-test-ca.pem', '-CAkey', 'cuilink-test-ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', days, '-extfile', `${name}.ext`], dir);
  };
  leaf('broker', [], 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  leaf('client', ['-aes-256-cbc', '-pass', `pass:${KEY_PASSPHRASE}`], 'extendedKeyUsage=clientAuth\n');
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'stray.key'], dir);
  // Kafka's PEM key store: the private key (PKCS#8) and the certificate chain in one file.
  writeFileSync(join(dir, 'broker-keystore.pem'), [readFileSync(join(dir, 'broker.key'), 'utf8'), readFileSync(join(dir, 'broker.pem'), 'utf8'), readFileSync(join(dir, 'cuilink-test-ca.pem'), 'utf8')].join('\n'));
  writeFileSync(join(dir, 'passphrase'), `${KEY_PASSPHRASE}\n`);
  return {
    dir,
    caFile: join(dir, 'cuilink-test-ca.pem'),
    otherCaFile: join(dir, 'cuilink-other-ca.pem'),
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client.key'),
    passphraseFile: join(dir, 'passphrase'),
    strayKeyFile: join(dir, 'stray.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface SecureBroker {
  broker: LocalBroker;
  /** SASL_SSL + SCRAM-SHA-512 + client certificates. */
  secure: string[];
  /** SASL_PLAINTEXT + OAUTHBEARER (unsecured JWTs). */
  oauth: string[];
  stop(): Promise<void>;
}

export async function startSecureBroker(pki: TestPki): Promise<SecureBroker> {
  const broker = await startLocalBroker({
    listeners: [
      { name: 'SECURE', protocol: 'SASL_SSL' },
      { name: 'OAUTH', protocol: 'SASL_PLAINTEXT' },
    ],
    scramUsers: [{ mechanism: 'SCRAM-SHA-512', ...SCRAM_USER }],
    properties: {
      'listener.name.secure.ssl.keystore.type': 'PEM',
      'listener.name.secure.ssl.keystore.location': join(pki.dir, 'broker-keystore.pem'),
      'listener.name.secure.ssl.truststore.type': 'PEM',
      'listener.name.secure.ssl.truststore.location': pki.caFile,
      // Honoured on a SASL_SSL listener only with the listener prefix.
      'listener.name.secure.ssl.client.auth': 'required',
      'listener.name.secure.sasl.enabled.mechanisms': 'SCRAM-SHA-512',
      'listener.name.secure.scram-sha-512.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'listener.name.oauth.sasl.enabled.mechanisms': 'OAUTHBEARER',
      'listener.name.oauth.oauthbearer.sasl.jaas.config': 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";',
    },
  });
  return { broker, secure: broker.listeners.SECURE!, oauth: broker.listeners.OAUTH!, stop: () => broker.stop() };
}

/** An unsigned JWT (alg none) Kafka's unsecured validator accepts. */
export function unsecuredJwt(sub: string, lifetimeS: number): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ sub, iat: now, exp: now + lifetimeS })}.`;
}

export interface TokenRequest {
  authorization: string | undefined;
  contentType: string | undefined;
  form: Record<string, string>;
}

export interface TokenEndpoint {
  url: string;
  requests: TokenRequest[];
  close(): Promise<void>;
}

/**
 * A local OIDC token endpoint for the client-credentials grant: `client_id:client_secret` by HTTP
 * Basic; answers 401 `invalid_client` to other credentials, else an unsecured JWT for `sub`.
 */
export async function startTokenEndpoint(options: { clientId: string; clientSecret: string; sub?: string; expiresInS?: number; /** Answered instead of a JWT ('' for an answer without one). */ accessToken?: string }): Promise<TokenEndpoint> {
  const requests: TokenRequest[] = [];
  const expected = `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      requests.push({ authorization: req.headers.authorization, contentType: req.headers['content-type'], form });
      const answer = (status: number, body: object): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || form.grant_type !== 'client_credentials') return answer(400, { error: 'unsupported_grant_type' });
      if (req.headers.authorization !== expected) return answer(401, { error: 'invalid_client', error_description: 'client authentication failed' });
      const expiresIn = options.expiresInS ?? 3600;
      const token = options.accessToken ?? unsecuredJwt(options.sub ?? 'cuilink-stage', expiresIn);
      answer(200, { ...(token !== '' ? { access_token: token } : {}), token_type: 'Bearer', expires_in: expiresIn });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/oauth2/token`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
