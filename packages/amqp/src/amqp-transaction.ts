import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { amqplib, type AmqplibChannel } from './amqplib-loader';

interface MethodDefs {
  TxSelect: number;
  TxSelectOk: number;
  TxCommit: number;
  TxCommitOk: number;
}

interface RpcChannel {
  rpc(method: number, fields: Record<string, never>, expect: number): Promise<unknown>;
}

// amqplib implements the tx class on the wire but exposes no API for it; its generic `rpc` and method ids do.
// (`amqplib` is imported first so its field-table codec is the tolerant one before defs.js is loaded.)
void amqplib;
const defs = createRequire(import.meta.url)(join(dirname(createRequire(import.meta.url).resolve('amqplib')), 'lib', 'defs.js')) as MethodDefs;

/**
 * Puts a channel in AMQP transaction mode (`tx.select`): from now on its publishes and acks take effect only at
 * `commitTransaction`, all together — and not at all if the channel or connection dies first.
 */
export async function selectTransactions(channel: AmqplibChannel): Promise<void> {
  await (channel as unknown as RpcChannel).rpc(defs.TxSelect, {}, defs.TxSelectOk);
}

/** `tx.commit`: applies the channel's publishes and acks since the last commit, atomically. */
export async function commitTransaction(channel: AmqplibChannel): Promise<void> {
  await (channel as unknown as RpcChannel).rpc(defs.TxCommit, {}, defs.TxCommitOk);
}
