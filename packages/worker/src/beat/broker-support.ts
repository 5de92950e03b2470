import { OptionalDependencyMissing, UnsupportedFeature, importOptionalPackage, type Transport } from '@kq/core';

/** The transport packages that ship beat leases and periodic cycle registers, by transport name. */
const PACKAGES: Readonly<Record<string, string>> = { redis: '@kq/redis', amqp: '@kq/amqp' };

/**
 * Loads the export `name` (a factory such as `createBeatLease`) of the package that provides `transport`. The
 * transport packages are optional peers of @kq/worker, so they are imported by name on demand, as core's transport
 * registry does.
 */
export async function loadBrokerFactory<F extends (...args: never[]) => unknown>(transport: Transport, name: string, purpose: string): Promise<F> {
  const packageName = PACKAGES[transport.name];
  if (!packageName) {
    throw new UnsupportedFeature(
      `${purpose} needs a broker-side lease, which the ${transport.name} transport does not provide. Use redis://, amqp:// or memory://, ` +
        `or pass one explicitly (the \`lease\`/\`register\` option).`,
    );
  }
  let module: Record<string, unknown>;
  try {
    module = (await importOptionalPackage(packageName)) as Record<string, unknown>;
  } catch (error) {
    throw new OptionalDependencyMissing(packageName, purpose, { cause: error });
  }
  const factory = module[name];
  if (typeof factory !== 'function') {
    throw new UnsupportedFeature(`${purpose} needs ${packageName} to export ${name}(); upgrade ${packageName} to the version of @kq/worker.`);
  }
  return factory as F;
}
