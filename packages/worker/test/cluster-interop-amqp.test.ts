// Issue #10's interop proof on RabbitMQ (default vhost; every name is unique to the run): see
// fixtures/cluster/interop-suite.ts.
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { describe } from 'vitest';
import { amqpCleanup, defineClusterInterop } from './fixtures/cluster/interop-suite';

const ready = (await brokerReachable('amqp')) && (await pythonAvailable(['celery', 'amqp']));

describe.skipIf(!ready)('RabbitMQ', () => {
  defineClusterInterop({ kind: 'amqp', url: brokerUrls.amqp, pythonUrl: `${brokerUrls.amqp.replace(/\/+$/, '')}//`, cleanup: amqpCleanup });
});
