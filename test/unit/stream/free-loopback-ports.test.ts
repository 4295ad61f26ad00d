import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { freeLoopbackPorts } from '../../../src/stream/local-broker.ts';

// A local broker's listeners were given ports asked for one at a time, each closed before the next
// was asked for: the OS handed one out twice (CONTROLLER and OAUTH on 34007 in a CI run), and Kafka
// refused to format ("two listeners on the same port"). Asked for together, they are distinct.
test('free loopback ports asked for together are distinct, free once returned, and none is left held', async () => {
  const ports = await freeLoopbackPorts(64);
  assert.equal(ports.length, 64);
  assert.equal(new Set(ports).size, 64);
  for (const port of ports.slice(0, 8)) {
    await new Promise<void>((done, fail) => {
      const server = createServer();
      server.once('error', fail);
      server.listen(port, '127.0.0.1', () => server.close(() => done()));
    });
  }
  assert.deepEqual(await freeLoopbackPorts(0), []);
});
