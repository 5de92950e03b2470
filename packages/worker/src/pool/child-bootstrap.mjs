// Starts a pool child from the TypeScript sources (tests, `tsx`): registers tsx in this thread or process, then
// imports the TypeScript entry. The built package runs `pool/child.js` directly and never loads this file.
import { workerData } from 'node:worker_threads';

const entry = workerData?.kqChildEntry ?? process.argv[2];
if (typeof entry !== 'string') throw new Error('child-bootstrap.mjs needs the child entry URL (workerData.kqChildEntry or argv[2]).');
const { register } = await import('tsx/esm/api');
register();
globalThis[Symbol.for('kq.tsxRegistered')] = true;
await import(entry);
