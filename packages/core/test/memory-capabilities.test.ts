import { MemoryResultBackend, MemoryTransport } from '@kq/core';
import { defineBeatLeaseSuite, defineChordJoinSuite, defineCycleRegisterSuite, defineDeadLetterSuite } from '@kq/test-harness';

// The memory transport's capabilities against the shared suites: transports naming one broker stand for processes
// of one app sharing it.
const BROKER = 'kq-memory-capabilities';
const create = (): MemoryTransport => new MemoryTransport({ broker: BROKER });

defineBeatLeaseSuite({ name: 'memory', create });
defineCycleRegisterSuite({ name: 'memory', create });
defineDeadLetterSuite({ name: 'memory', create, keepsReason: true });
// Result backends naming one store share its chord joins, as the processes of one app share a Redis.
defineChordJoinSuite({ name: 'memory', create: () => new MemoryResultBackend(BROKER) });
