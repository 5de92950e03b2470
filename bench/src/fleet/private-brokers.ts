// The fleet bench's brokers: a private redis-server and a private RabbitMQ node on ports of their own, so other
// tests on the shared brokers neither add to the broker CPU measured nor see the fleet's traffic.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RabbitNode } from '@kq/test-harness/rabbit-cluster';
import { waitFor } from '@kq/test-harness';
import { killOnExit } from './fleet-processes';

const run = promisify(execFile);

/** What a broker counts of the traffic through it, read at one instant. */
export interface BrokerCounters {
  /** Redis: commands processed; RabbitMQ: messages published by clients. */
  received: number;
  /** Redis: bytes sent to clients; RabbitMQ: messages delivered to consumers (pushed and fetched). */
  sent: number;
  connections: number;
  /** Redis: each command's calls and microseconds spent so far (`INFO commandstats`); RabbitMQ: none. */
  commands?: ReadonlyMap<string, CommandCost>;
}

/** What one command has cost the broker so far: how often it ran, and Redis's own time in it. */
export interface CommandCost {
  calls: number;
  usec: number;
}

export interface FleetBroker {
  readonly kind: 'redis' | 'amqp';
  readonly url: string;
  /** The broker's server process, for its CPU time. */
  pid(): number | undefined;
  counters(): Promise<BrokerCounters>;
  destroy(): Promise<void>;
}

export class PrivateRedis implements FleetBroker {
  readonly kind = 'redis' as const;
  readonly port: number;
  readonly #dir = mkdtempSync(join(tmpdir(), 'kq-fleet-redis-'));
  #process: ChildProcess | undefined;

  constructor(port: number) {
    this.port = port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  async start(): Promise<void> {
    // maxclients: a fleet of 200 kq workers holds ~600 connections; Python's more.
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.#dir, '--save', '', '--appendonly', 'no', '--maxclients', '10000'];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    this.#process = child;
    killOnExit(() => child.kill('SIGKILL'));
    await waitFor(() => this.#cli('PING').then((out) => out === 'PONG', () => false), 15_000, `redis-server on ${this.port}`);
  }

  pid(): number | undefined {
    return this.#process?.pid;
  }

  async counters(): Promise<BrokerCounters> {
    const info = parseInfo(await this.#cli('INFO', 'all'));
    return {
      received: Number(info.get('total_commands_processed') ?? 0),
      sent: Number(info.get('total_net_output_bytes') ?? 0),
      connections: Number(info.get('connected_clients') ?? 0),
      commands: commandCostsOf(info),
    };
  }

  async destroy(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }

  async #cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...args], { timeout: 10_000 });
    return stdout.trim();
  }
}

export class PrivateRabbit implements FleetBroker {
  readonly kind = 'amqp' as const;
  readonly #node: RabbitNode;
  #beamPid: number | undefined;

  constructor(port: number) {
    this.#node = new RabbitNode(port);
  }

  get url(): string {
    return this.#node.url;
  }

  async start(): Promise<void> {
    await this.#node.start();
    const pid = Number(readFileSync(join(this.#node.dir, 'pid'), 'utf8').trim()) || undefined;
    this.#beamPid = pid;
    if (pid !== undefined) killOnExit(() => process.kill(pid, 'SIGKILL'));
  }

  pid(): number | undefined {
    return this.#beamPid;
  }

  async counters(): Promise<BrokerCounters> {
    // The node's global counters (RabbitMQ >= 3.9), read inside the node in one call: no management plugin, whose own
    // statistics would cost CPU, and no listing of hundreds of connections through rabbitmqctl.
    const expression = [
      'O = rabbit_global_counters:overview(),',
      'R = maps:get(messages_received_total, maps:get([{protocol,amqp091}], O)),',
      'D = lists:sum([maps:get(messages_delivered_total, V, 0) || {K, V} <- maps:to_list(O), lists:member({protocol,amqp091}, K), lists:keymember(queue_type, 1, K)]),',
      '{R, D, length(rabbit_networking:connections())}.',
    ].join(' ');
    const [received = 0, sent = 0, connections = 0] = (/\{(\d+),(\d+),(\d+)\}/.exec(await this.#node.ctl('eval', expression)) ?? []).slice(1).map(Number);
    return { received, sent, connections };
  }

  async destroy(): Promise<void> {
    await this.#node.destroy();
  }
}

/** `cmdstat_brpop:calls=1,usec=2,...` lines as command → cost (`evalsha`, `publish`...). */
export function commandCostsOf(info: ReadonlyMap<string, string>): Map<string, CommandCost> {
  const costs = new Map<string, CommandCost>();
  for (const [field, value] of info) {
    if (!field.startsWith('cmdstat_')) continue;
    const calls = /(?:^|,)calls=(\d+)/.exec(value)?.[1];
    const usec = /(?:^|,)usec=(\d+)/.exec(value)?.[1];
    costs.set(field.slice('cmdstat_'.length), { calls: Number(calls ?? 0), usec: Number(usec ?? 0) });
  }
  return costs;
}

export function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}
