import { Redis, type RedisOptions } from 'ioredis';
import type { RedisEndpoint } from './broker-url';

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

  /** The name prefix shared by this store's connections. */
  get namePrefix(): string {
    return `${this.#options.namePrefix.replace(/\s+/g, '_')}.${this.#options.storeId}.`;
  }

  create(role: string, overrides: RedisOptions = {}): Redis {
    const given = this.#options.redisOptions ?? {};
    const fromUrl = this.#options.endpoint.connection;
    // rediss:// turns TLS on; certificates and other TLS settings given in redisOptions still apply.
    const tls = fromUrl.tls || given.tls ? { ...fromUrl.tls, ...given.tls } : undefined;
    const client = new Redis({
      ...given,
      ...fromUrl,
      ...(tls ? { tls } : {}),
      lazyConnect: true,
      connectionName: this.namePrefix + role,
      ...overrides,
    });
    client.on('error', (error: Error) => this.#options.onError(error, role));
    return client;
  }
}
