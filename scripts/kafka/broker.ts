// `npm run kafka:start` / `npm run kafka:stop` / `npm run kafka:status`: the development broker
// in the background (port from KAFKA_PORT, default 9092; data in .kafka/data).
import { readBackgroundBroker, startBackgroundBroker, stopBackgroundBroker } from '../../src/stream/background-broker.ts';
import { CuilinkError } from '../../src/kb/errors.ts';

async function main(action: string | undefined): Promise<number> {
  switch (action) {
    case 'start': {
      const port = process.env.KAFKA_PORT === undefined ? undefined : Number(process.env.KAFKA_PORT);
      const { record, alreadyRunning } = await startBackgroundBroker({ port, log: (line) => process.stderr.write(`${line}\n`) });
      console.log(`${alreadyRunning ? 'already running' : 'started'}: Kafka on ${record.brokers.join(',')} (pid ${record.pid}, data ${record.dataDir})`);
      console.log(`use: export CUILINK_BROKERS=${record.brokers.join(',')}`);
      return 0;
    }
    case 'stop':
      console.log((await stopBackgroundBroker()) ? 'stopped' : 'no background broker was running');
      return 0;
    case 'status': {
      const record = readBackgroundBroker();
      console.log(record === undefined ? 'not running' : `running: Kafka on ${record.brokers.join(',')} (pid ${record.pid})`);
      return record === undefined ? 1 : 0;
    }
    default:
      console.error('usage: broker.ts start|stop|status');
      return 2;
  }
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof CuilinkError ? `${error.code}: ${error.message}` : error);
    process.exit(1);
  },
);
