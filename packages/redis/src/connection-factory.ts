import type { ClusterOptions, RedisOptions } from 'ioredis';
import { Cluster, Redis } from './ioredis-module';
import type { RedisEndpoint } from './broker-url';
import type { ClusterNodeAddress } from './redis-options';
import { guardClusterTls, guardTls } from './tls-guard';

/** A command connection: one server, or (cluster mode) ioredis's `Cluster`, which routes each command by its key's slot. */
export type RedisClient = Redis | Cluster;

export interface ConnectionFactoryOptions {
  endpoint: RedisEndpoint;
  /** Client name prefix (CLIENT SETNAME), e.g. `kq`. */
  namePrefix: string;
  /** Distinguishes this store's connections from other processes' (and other stores') in CLIENT LIST. */
  storeId: string;
  redisOptions: RedisOptions | undefined;
  onError: (error: Error, role: string) => void;
}

/**
 * Makes the store's ioredis connections. Each is named `<prefix>.<store id>.<role>` (`cmd`, `sub`, `block-N`) so
 * operators (and tests) can find kq's connections in CLIENT LIST.
 */
export class ConnectionFactory {
  readonly #options: ConnectionFactoryOptions;

  constructor(options: ConnectionFactoryOptions) {
    this.#options = options;
  }

  /** The database number the URL (or the `db` option) selects. */
  get db(): number {
    return this.#options.endpoint.db;
  }

  /** True for Redis Cluster (kq's cluster layout). */
  get cluster(): boolean {
    return this.#options.endpoint.cluster !== undefined;
  }

  /** The name prefix shared by this store's connections. */
  get namePrefix(): string {
    return `${this.#options.namePrefix.replace(/\s+/g, '_')}.${this.#options.storeId}.`;
  }

  /** A connection to the server, or the cluster (commands, subscriber). */
  createClient(role: string, overrides: RedisOptions = {}): RedisClient {
    const cluster = this.#options.endpoint.cluster;
    if (!cluster) return this.create(role, overrides);
    const { enableAutoPipelining, ...perNode } = overrides;
    const options: ClusterOptions = {
      redisOptions: { ...this.#nodeOptions(role), ...perNode },
      lazyConnect: true,
      enableAutoPipelining: enableAutoPipelining ?? false,
      // A master that fails over (or a slot that moves) is found again from the other nodes instead of failing the command.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
    };
    const client = new Cluster(cluster.nodes, options);
    client.on('error', (error: Error) => this.#options.onError(error, role));
    return guardClusterTls(client, this.#options.endpoint.description.ssl ? 'rediss' : 'redis', cluster.nodes);
  }

  /**
   * The subscriber connection. On a cluster it is a plain connection to one node, not ioredis's cluster subscriber: a
   * cluster forwards every PUBLISH to all its nodes, so any node serves, and ioredis's, with no node reachable, makes
   * a new connection after each failed one at once (CPU spinning, memory growing by tens of MiB a second, and a
   * MaxListeners warning: redis/ioredis#2030). This one reconnects with backoff, trying the next node each time
   * (`nodes`: the cluster's nodes as last seen, else the startup nodes), and ioredis resubscribes on the node it reaches.
   */
  createSubscriber(role: string, overrides: RedisOptions = {}, nodes?: () => readonly ClusterNodeAddress[]): Redis {
    const cluster = this.#options.endpoint.cluster;
    if (!cluster) return this.create(role, overrides);
    const given = this.#options.redisOptions?.retryStrategy;
    const candidates = (): readonly ClusterNodeAddress[] => {
      const known = nodes?.() ?? [];
      return known.length > 0 ? known : cluster.nodes;
    };
    // A node picked at random, as ioredis picks its subscriber's, so a fleet's subscribers spread over the cluster.
    let turn = Math.floor(Math.random() * candidates().length);
    const first = candidates()[turn] as ClusterNodeAddress;
    const client = this.create(role, {
      ...overrides,
      retryStrategy: (times) => {
        const next = candidates()[++turn % candidates().length] as ClusterNodeAddress;
        // ioredis's connector reads host and port from this same options object on every connect.
        client.options.host = next.host;
        client.options.port = next.port;
        return given ? given(times) : Math.min(times * 100, 2000);
      },
    }, first);
    return client;
  }

  /** A connection to one server: the URL's, or (cluster mode) the node at `node`. */
  create(role: string, overrides: RedisOptions = {}, node?: { host: string; port: number }): Redis {
    const client = new Redis({ ...this.#nodeOptions(role), ...(node ? { host: node.host, port: node.port } : {}), ...overrides });
    client.on('error', (error: Error) => this.#options.onError(error, role));
    const { host, port } = client.options;
    return guardTls(client, `${this.#options.endpoint.description.ssl ? 'rediss' : 'redis'}://${host ?? 'localhost'}:${port ?? 6379}`);
  }

  #nodeOptions(role: string): RedisOptions {
    const given = this.#options.redisOptions ?? {};
    const fromUrl = this.#options.endpoint.connection;
    // rediss:// turns TLS on; certificates and other TLS settings given in redisOptions still apply.
    const tls = fromUrl.tls || given.tls ? { ...fromUrl.tls, ...given.tls } : undefined;
    return {
      ...given,
      ...fromUrl,
      ...(tls ? { tls } : {}),
      lazyConnect: true,
      connectionName: this.namePrefix + role,
    };
  }
}
