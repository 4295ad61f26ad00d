import { InputError } from '../kb/errors.ts';
import { parseBrokerList, validateKafkaConnection, type KafkaConnectionConfig, type ValidatedKafkaConnection } from '../stream/kafka-client.ts';
import { KAFKA_SECURITY_ENV_VARS, kafkaSecurityFromEnv, tlsVariablesConflict } from '../stream/kafka-security.ts';
import type { SchemaRegistryOptions } from '../stream/avro/confluent-avro-codec.ts';
import { schemaRegistryFromEnv } from '../stream/avro/schema-registry-config.ts';

/** Broker and schema-registry flags of the Kafka tools (`evaluator`, `gold-sample`); the stage reads its config file instead. */
export const KAFKA_FLAG_OPTIONS = {
  brokers: { type: 'string' },
  'schema-registry': { type: 'string' },
  'client-id': { type: 'string' },
} as const;

export const KAFKA_FLAGS_HELP = `  --brokers H:P,H:P      Kafka bootstrap brokers (or CUILINK_BROKERS; 'npm run kafka:start' runs a local one)
  --schema-registry URL  use the Confluent wire format through this registry (or CUILINK_SCHEMA_REGISTRY_URL);
                         default: the plain format, Avro single-object encoding (docs/stream-formats.md)
  Registry auth, TLS and subjects from the environment (docs/stream-formats.md): CUILINK_SCHEMA_REGISTRY_USERNAME
  with _PASSWORD or _PASSWORD_FILE, or _BEARER_TOKEN / _BEARER_TOKEN_FILE; _CA_FILE, _CERT_FILE, _KEY_FILE,
  _TLS_REJECT_UNAUTHORIZED=false (tests only); CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY topic (default:
  <topic>-value) | record | topic-record
  --client-id ID         Kafka client id
  TLS/SASL from the environment (docs/security.md): CUILINK_SSL=true, CUILINK_KAFKA_TLS_CA_FILE, _CERT_FILE,
  _KEY_FILE, _KEY_PASSPHRASE_FILE, _SERVERNAME; CUILINK_SASL_MECHANISM (plain|scram-sha-256|scram-sha-512|
  oauthbearer), CUILINK_SASL_USERNAME, CUILINK_SASL_PASSWORD or _PASSWORD_FILE; for oauthbearer
  CUILINK_SASL_OAUTH_TOKEN_ENDPOINT, _CLIENT_ID, _CLIENT_SECRET or _CLIENT_SECRET_FILE, _SCOPE`;

interface KafkaFlagValues {
  brokers?: string;
  'schema-registry'?: string;
  'client-id'?: string;
}

export function kafkaRequest(values: KafkaFlagValues, defaultClientId: string, env: NodeJS.ProcessEnv = process.env): { connection: ValidatedKafkaConnection; schemaRegistry?: SchemaRegistryOptions } {
  const brokers = parseBrokerList(values.brokers ?? env.CUILINK_BROKERS ?? '');
  if (brokers.length === 0) {
    throw new InputError("no Kafka brokers: pass --brokers host:port or set CUILINK_BROKERS ('npm run kafka:start' starts a local broker)", 'BAD_FLAGS');
  }
  const conflict = tlsVariablesConflict(env);
  if (conflict !== undefined) throw new InputError(conflict, 'INVALID_CONFIG');
  // TLS and SASL from CUILINK_* variables; their files are read and checked here, and a problem names the variable.
  const security = kafkaSecurityFromEnv(env);
  const connection = validateKafkaConnection(
    { brokers, clientId: values['client-id'] ?? defaultClientId, ...security.config } as KafkaConnectionConfig,
    (path) => {
      if (path.split('.')[0] === 'brokers') return `${values.brokers !== undefined ? '--brokers' : 'environment variable CUILINK_BROKERS'} ('${path}')`;
      // The variable that set the field, or the one that would (a required field left unset).
      const variable = security.variables.get(path) ?? KAFKA_SECURITY_ENV_VARS.find(([, p]) => p.join('.') === path)?.[0];
      return variable !== undefined ? `environment variable ${variable} ('${path}')` : `Kafka connection '${path}'`;
    },
  );
  // An empty variable is unset, as everywhere else it is read (schemaRegistryFromEnv, the stage).
  const registryUrl = values['schema-registry'] ?? (env.CUILINK_SCHEMA_REGISTRY_URL || undefined);
  if (registryUrl !== undefined && !/^https?:\/\/\S+$/.test(registryUrl)) throw new InputError(`${values['schema-registry'] !== undefined ? '--schema-registry' : 'CUILINK_SCHEMA_REGISTRY_URL'} must be an http(s) URL, got '${registryUrl}'`, 'BAD_FLAGS');
  return { connection, schemaRegistry: schemaRegistryFromEnv(env, values['schema-registry']) };
}
