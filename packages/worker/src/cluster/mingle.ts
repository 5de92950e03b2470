import { Mailbox, pythonRepr, type MailboxReply } from '@kq/core';
import { SOFTWARE_INFO } from '../protocol/software-info';
import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import type { ClusterContext } from './cluster-context';

/** Transports Celery runs Mingle on. */
const MINGLE_TRANSPORTS: ReadonlySet<string> = new Set(['amqp', 'redis']);

/**
 * The `hello` argument by which a kq worker asks only the Gossip watchers to answer. Celery's `hello` takes
 * `**kwargs`, so Python workers ignore it and answer as they always do; other kq workers stay silent.
 */
export const HELLO_WATCHERS_ONLY = 'kq_watchers_only';
/**
 * A watchers-only `hello` waits this many times Mingle's timeout for the first answer, and expires after as long:
 * the watchers are few and busy, and a reply of theirs that comes late is still far cheaper than asking everyone.
 */
export const WATCHERS_HELLO_WINDOW = 5;
/** Reply fields a watcher adds for a kq asker (Celery's `sync_with_node` takes `**kwargs` and ignores them). */
export const HELLO_WATCHERS = 'kq_watchers';
export const HELLO_PEERS = 'kq_peers';

/** What one neighbour answered to `hello`. */
export interface MingleReply {
  clock?: unknown;
  revoked?: unknown;
  /** A kq watcher's: the watchers it knows of. */
  kq_watchers?: unknown;
  /** A kq watcher's: every peer it knows alive. */
  kq_peers?: unknown;
}

/**
 * Celery's `Mingle`: at start-up, before consuming, the worker broadcasts `hello` with its revoked set
 * (docs/wire.md#mingle-heartbeats-and-gossip) and syncs with the replies: from each it adopts the clock (`adjust`, or
 * `forward` when there is none) and merges the revoked tasks, so a task revoked while this worker was down is not
 * run. It runs before the worker's own control node listens, so it never answers its own hello.
 *
 * Celery asks every worker and waits until a second passes without a reply: in a fleet of N, every start costs N
 * replies, and a start takes as long as the slowest of them. A kq worker asks only the Gossip watchers (every live
 * worker holds the same revoked set, the watchers included) and stops once every watcher they name has answered;
 * Python workers answer too and are synced with as before. Should listeners stay silent (the watchers just went),
 * it asks again the way Celery does; should nobody listen at all, it is alone and does not ask again.
 */
export class MingleStep implements WorkerStep {
  readonly name = 'Mingle';
  readonly #context: ClusterContext;
  /** Node names synced with at the last start. */
  synced: string[] = [];

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  async start(worker: WorkerHost): Promise<void> {
    if (!this.#context.owns(worker)) return;
    const transport = await worker.app.connection.transport();
    const enabled = this.#context.options.mingle ?? MINGLE_TRANSPORTS.has(transport.name);
    if (!enabled || !transport.capabilities.fanout) return;
    const neighbours = new Map<string, Record<string, unknown>>();
    this.synced = await mingle(worker, (this.#context.options.mingleTimeout ?? 1) * 1000, neighbours);
    // Gossip starts from these: a worker that follows no heartbeats learns its peers from them and from their online
    // events.
    this.#context.neighbours = neighbours;
  }

  async stop(): Promise<void> {}
}

/**
 * Says hello to the other workers and syncs with their replies; resolves to the node names synced with. `neighbours`,
 * when given, receives every other node heard of: those that answered, and the peers the watchers named.
 */
export async function mingle(worker: WorkerHost, timeoutMs = 1000, neighbours?: Map<string, Record<string, unknown>>): Promise<string[]> {
  const { log, app } = worker;
  log.info('mingle: searching for neighbors');
  // A mailbox of its own, whose reply queue goes once Mingle is done: a reply queue left bound for the worker's
  // life is one more binding every later reply to anyone is routed past (on Redis, read on each reply).
  const mailbox = new Mailbox(app.connection, {
    namespace: app.conf.controlExchange,
    serializer: app.conf.taskSerializer,
    accept: app.conf.acceptContent,
    clock: app.control.mailbox.clock,
  });
  let replies: MailboxReply[];
  try {
    let nobodyListened = false;
    replies = await sayHello(worker, mailbox, timeoutMs, true, () => (nobodyListened = true));
    // Asked again only when listeners stayed silent. With nobody listening there is no one to sync with: a worker
    // whose node began listening since is starting too and knows no more than we do, and asking it Celery's way
    // would cost the full timeout of silence (every worker of a fleet started together but the first).
    if (replies.length === 0 && !nobodyListened) replies = await sayHello(worker, mailbox, timeoutMs, false);
  } catch (error) {
    log.warning(`mingle: could not reach the other workers: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  } finally {
    await mailbox.close().catch(() => undefined);
  }
  const byNode = new Map<string, unknown>();
  for (const reply of replies) for (const [node, value] of Object.entries(reply)) byNode.set(node, value);
  byNode.delete(worker.hostname); // our own reply, should a node of ours already listen
  for (const [node, value] of byNode) {
    neighbours?.set(node, {});
    const { watchers, peers } = hintsOf(value);
    for (const peer of peers) if (peer !== worker.hostname && !neighbours?.has(peer)) neighbours?.set(peer, {});
    for (const watcher of watchers) if (watcher !== worker.hostname) neighbours?.set(watcher, { sw_ident: SOFTWARE_INFO.sw_ident });
  }
  if (byNode.size === 0) {
    log.info('mingle: all alone');
    return [];
  }
  const synced = [...byNode].filter(([, value]) => Boolean(value));
  log.info(`mingle: sync with ${synced.length} nodes`);
  for (const [node, reply] of synced) {
    log.debug(`mingle: processing reply from ${node}`);
    try {
      syncWithNode(worker, reply);
    } catch (error) {
      log.error(`mingle: sync with ${node} failed: ${errorRepr(error)}`);
    }
  }
  log.info('mingle: sync complete');
  return synced.map(([node]) => node);
}

/**
 * One `hello` broadcast. `watchersOnly`: only kq's Gossip watchers (and Python workers) answer, within a longer first
 * window (`WATCHERS_HELLO_WINDOW`), and collecting stops once every watcher named in the replies has answered; otherwise every worker answers and collecting stops when
 * `timeoutMs` passes without a reply, as Celery's.
 */
function sayHello(worker: WorkerHost, mailbox: Mailbox, timeoutMs: number, watchersOnly: boolean, onNobodyListening?: () => void): Promise<MailboxReply[]> {
  const args: Record<string, unknown> = { from_node: worker.hostname, revoked: worker.state.revoked.toWire() };
  if (!watchersOnly) return mailbox.broadcast('hello', { arguments: args, reply: true, timeout: timeoutMs });
  return mailbox.broadcast('hello', {
    arguments: { ...args, [HELLO_WATCHERS_ONLY]: true },
    reply: true,
    timeout: timeoutMs,
    onNobodyListening,
    firstReplyTimeout: timeoutMs * WATCHERS_HELLO_WINDOW,
    until: (replies) => allWatchersAnswered(replies, worker.hostname),
  });
}

/** True once some watcher answered and so did every watcher any answer names (this worker aside). */
export function allWatchersAnswered(replies: readonly MailboxReply[], self: string): boolean {
  const answered = new Set<string>();
  const named = new Set<string>();
  for (const reply of replies) {
    for (const [node, value] of Object.entries(reply)) {
      answered.add(node);
      for (const watcher of hintsOf(value).watchers) if (watcher !== self) named.add(watcher);
    }
  }
  if (named.size === 0) return false;
  for (const watcher of named) if (!answered.has(watcher)) return false;
  return true;
}

/** The watchers and peers a kq watcher's reply names (none in anyone else's). */
function hintsOf(reply: unknown): { watchers: string[]; peers: string[] } {
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply)) return { watchers: [], peers: [] };
  const { kq_watchers: watchers, kq_peers: peers } = reply as MingleReply;
  return { watchers: stringsOf(watchers), peers: stringsOf(peers) };
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && item !== '') : [];
}

/** Adopts one neighbour's clock and revoked set (Celery's `sync_with_node`). */
export function syncWithNode(worker: WorkerHost, reply: unknown): void {
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply)) {
    throw new TypeError(`expected a mapping, got ${pythonRepr(reply)}`);
  }
  const { clock, revoked } = reply as MingleReply;
  if (clock) worker.app.clock.adjust(Number(clock));
  else worker.app.clock.forward();
  if (revoked && typeof revoked === 'object' && !Array.isArray(revoked) && Object.keys(revoked).length > 0) {
    worker.state.revoked.update(revoked as Record<string, unknown>);
  }
}

function errorRepr(error: unknown): string {
  return error instanceof Error ? `${error.name}(${pythonRepr(error.message)})` : pythonRepr(String(error));
}
