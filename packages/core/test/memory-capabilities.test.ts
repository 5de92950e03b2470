import { MemoryTransport } from '@kq/core';
import { defineBeatLeaseSuite, defineCycleRegisterSuite, defineDeadLetterSuite } from '@kq/test-harness';

// The memory transport's capabilities against the shared suites: transports naming one broker stand for processes
// of one app sharing it.
const BROKER = 'kq-memory-capabilities';
const create = (): MemoryTransport => new MemoryTransport({ broker: BROKER });

defineBeatLeaseSuite({ name: 'memory', create });
defineCycleRegisterSuite({ name: 'memory', create });
defineDeadLetterSuite({ name: 'memory', create, keepsReason: true });
