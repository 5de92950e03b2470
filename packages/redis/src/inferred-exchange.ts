import { Exchange, type ExchangeType } from '@kq/core';

/**
 * An exchange kq only knows from Kombu's `_kombu.binding.<name>` set: Kombu keeps exchange types in process memory,
 * so a Python process's exchange leaves no declaration in Redis. The type is a guess — `topic` when a member carries
 * a topic regex, `direct` otherwise (Kombu's own default for an exchange it never declared) — good enough to publish
 * to. A fanout exchange looks like a direct one here, so a kq process must declare fanout (and topic) exchanges itself.
 * Any real declaration replaces the guess, whatever its type.
 */
export class InferredExchange extends Exchange {
  constructor(name: string, type: ExchangeType) {
    super(name, { type });
  }

  override sameDeclaration(): boolean {
    return true;
  }
}
