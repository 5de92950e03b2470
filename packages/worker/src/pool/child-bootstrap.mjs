// Starts a pool child from the TypeScript sources (tests, `tsx`): registers tsx and the `kq-source` condition in this
// thread or process (see ../platform/source-mode.mjs), then imports the TypeScript entry. The built package runs
// `pool/child.js` directly and never loads this file.
import { workerData } from 'node:worker_threads';
import { runFromSources } from '../platform/source-mode.mjs';

const entry = workerData?.kqChildEntry ?? process.argv[2];
if (typeof entry !== 'string') throw new Error('child-bootstrap.mjs needs the child entry URL (workerData.kqChildEntry or argv[2]).');
await runFromSources();
await import(entry);
