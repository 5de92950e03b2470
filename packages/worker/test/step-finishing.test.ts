// A step's start may leave work finishing (Gossip's queue): the control node and the task consumer start meanwhile,
// side by side, and the worker is ready once all of it has. A fleet worker starting on a busy machine used to wait
// for each broker round trip of each in turn.
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import type { StepFinishing, WorkerStep } from '../src/runtime/bootstep';
import type { Worker } from '../src/runtime/worker';
import { memoryApp, memoryBrokerName, recordingLogger, sleep } from './fixtures/cluster/helpers';

/** A step whose start leaves a promise finishing that the test settles. */
class SlowFinishingStep implements WorkerStep {
  readonly name = 'SlowFinishing';
  finish: () => void = () => undefined;
  finished = false;
  stoppedAfterFinishing: boolean | undefined;
  #finishing: Promise<void> | undefined;

  async start(): Promise<StepFinishing> {
    this.#finishing = new Promise<void>((resolve) => (this.finish = resolve)).then(() => void (this.finished = true));
    return { finishing: this.#finishing };
  }

  async stop(): Promise<void> {
    await this.#finishing;
    this.stoppedAfterFinishing = this.finished;
  }
}

describe('a step that leaves work finishing', () => {
  let app: App | undefined;
  let worker: Worker | undefined;

  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app?.close();
    worker = undefined;
    app = undefined;
  });

  it('lets the control node and the task consumer start meanwhile; the worker is ready once it has finished', async () => {
    const broker = memoryBrokerName('step-finishing');
    app = memoryApp(broker, { backend: `memory://${broker}` });
    const add = app.task('add', (_ctx, a: number, b: number) => a + b);
    const step = new SlowFinishingStep();
    worker = app.worker({ hostname: 'finishing@test', logger: recordingLogger().logger, steps: [step] });
    let ready = false;
    worker.on('ready', () => (ready = true));
    const starting = worker.start();
    // Remote control answers and tasks run while the step is still finishing: both started side by side with it.
    let pong: unknown[] = [];
    for (const deadline = Date.now() + 5000; pong.length === 0 && Date.now() < deadline; ) {
      pong = await app.control.ping({ timeout: 100 });
      if (pong.length === 0) await sleep(20);
    }
    expect(pong).toEqual([{ 'finishing@test': { ok: 'pong' } }]);
    expect(await (await add.delay(2, 3)).get({ timeout: 5000 })).toBe(5);
    expect(ready).toBe(false);
    step.finish();
    await starting;
    expect(ready).toBe(true);
  });

  it('is waited for by its own stop when the worker stops before it finished', async () => {
    app = memoryApp(memoryBrokerName('step-finishing-stop'));
    const step = new SlowFinishingStep();
    worker = app.worker({ hostname: 'stopping@test', logger: recordingLogger().logger, steps: [step] });
    const starting = worker.start();
    await sleep(50);
    const stopping = worker.stop();
    step.finish();
    await Promise.all([starting, stopping]);
    expect(step.stoppedAfterFinishing).toBe(true);
    worker = undefined;
  });
});
