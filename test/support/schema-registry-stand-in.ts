import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';

/**
 * The subset of the Confluent Schema Registry REST API that @kafkajs/confluent-schema-registry
 * calls (subject config, register, schema by id), in process, optionally behind basic or bearer
 * auth and over https. A stand-in because neither
 * Confluent Schema Registry nor Karapace can be installed from the registries this project
 * reaches; it checks nothing about compatibility, so it tests the wire format, not a registry.
 * Apicurio Registry 3.x (io.apicurio:apicurio-registry-app, Confluent API at /apis/ccompat/v7) was
 * tried (issue 16): the app jar is a Quarkus module that needs a Quarkus build from Maven Central;
 * 3.3.3 is the only version whose parent POM is there, and its Quarkus dependencies do not resolve
 * (e.g. io.quarkus:quarkus-smallrye-health-parent:pom:3.33.3.1 and, overriding Quarkus to 3.33.2,
 * quarkus-resteasy-client-jackson-parent:pom:3.33.2 are not found), so the stand-in stays.
 */
export interface SchemaRegistryStandIn {
  url: string;
  /**
   * Registers a schema directly, as another producer would; returns its id. `schemaType` as the
   * registry's REST API names it (AVRO when absent; JSON, PROTOBUF): stored as given, unchecked.
   */
  register(subject: string, schema: string, schemaType?: string): number;
  requests: string[];
  /** Subject → ids registered under it, in order. */
  subjects: Map<string, number[]>;
  /** Requests answered 401 (no or wrong credentials). */
  refused: string[];
  close(): Promise<void>;
}

export interface SchemaRegistryStandInOptions {
  /** Every request must carry HTTP basic auth with these (401 otherwise, as Confluent's USER_INFO). */
  basic?: { username: string; password: string };
  /** Every request must carry `Authorization: Bearer <token>` (401 otherwise). */
  bearer?: string;
  /** Serve https with this PEM certificate and key. */
  tls?: { cert: string; key: string };
}

export async function startSchemaRegistryStandIn(options: SchemaRegistryStandInOptions = {}): Promise<SchemaRegistryStandIn> {
  const ids = new Map<string, number>();
  const schemas: { schema: string; schemaType?: string }[] = [];
  const configs = new Map<string, string>();
  const requests: string[] = [];
  const refused: string[] = [];
  const subjects = new Map<string, number[]>();
  const register = (subject: string, schema: string, schemaType?: string): number => {
    let canonical = schema;
    try {
      canonical = JSON.stringify(JSON.parse(schema));
    } catch {
      // Not JSON (a Protobuf schema, or garbage another producer got registered): kept as written.
    }
    const key = `${schemaType ?? 'AVRO'} ${canonical}`;
    let id = ids.get(key);
    if (id === undefined) {
      // The REST API leaves schemaType out for Avro.
      schemas.push(schemaType === undefined || schemaType === 'AVRO' ? { schema: canonical } : { schema: canonical, schemaType });
      id = schemas.length;
      ids.set(key, id);
    }
    const versions = subjects.get(subject) ?? [];
    if (!versions.includes(id)) versions.push(id);
    subjects.set(subject, versions);
    return id;
  };
  const expected = options.basic !== undefined ? `Basic ${Buffer.from(`${options.basic.username}:${options.basic.password}`).toString('base64')}` : options.bearer !== undefined ? `Bearer ${options.bearer}` : undefined;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}`);
      const send = (status: number, payload: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
        res.end(JSON.stringify(payload));
      };
      if (expected !== undefined && req.headers.authorization !== expected) {
        refused.push(`${req.method} ${req.url}`);
        res.writeHead(401, { 'content-type': 'application/vnd.schemaregistry.v1+json', 'www-authenticate': options.bearer !== undefined ? 'Bearer' : 'Basic realm="SchemaRegistry"' });
        return res.end(JSON.stringify({ error_code: 401, message: 'Unauthorized' }));
      }
      const url = decodeURIComponent(req.url ?? '');
      let match: RegExpMatchArray | null;
      if ((match = url.match(/^\/config\/(.+)$/))) {
        if (req.method === 'PUT') {
          const compatibility = (JSON.parse(body) as { compatibility: string }).compatibility;
          configs.set(match[1]!, compatibility);
          return send(200, { compatibility });
        }
        const level = configs.get(match[1]!);
        return level === undefined ? send(404, { error_code: 40401, message: 'Subject not found.' }) : send(200, { compatibilityLevel: level });
      }
      if ((match = url.match(/^\/subjects\/(.+)\/versions$/)) && req.method === 'POST') {
        const request = JSON.parse(body) as { schema: string; schemaType?: string };
        return send(200, { id: register(match[1]!, request.schema, request.schemaType) });
      }
      if ((match = url.match(/^\/schemas\/ids\/(\d+)$/))) {
        const schema = schemas[Number(match[1]) - 1];
        return schema === undefined ? send(404, { error_code: 40403, message: 'Schema not found' }) : send(200, schema);
      }
      send(404, { error_code: 404, message: 'not found' });
    });
  };
  const server: Server = options.tls !== undefined ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler) : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `${options.tls !== undefined ? 'https' : 'http'}://127.0.0.1:${port}`,
    register,
    requests,
    subjects,
    refused,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
