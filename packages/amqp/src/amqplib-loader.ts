import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Amqplib from 'amqplib';
import { decodeFieldTable } from './field-table-decoder';

const TOLERANT = Symbol.for('kq.amqp.tolerantFieldTables');

interface AmqplibCodec {
  decodeFields: ((slice: Buffer) => Record<string, unknown>) & { [TOLERANT]?: true };
}

interface LoadedAmqplib {
  amqplib: typeof Amqplib;
  /**
   * True when amqplib decodes field tables with `decodeFieldTable` (py-amqp's `L` tag understood, unknown tags
   * kept as bytes). False only if amqplib was loaded by someone else before this module: its frame decoder then
   * captured the stock decoder, and a Python header holding an integer beyond 32 bits closes the connection.
   */
  tolerantFieldTables: boolean;
  /**
   * True when that decoder is this copy's `decodeFieldTable` (not one installed by another copy of this package in
   * the same process): only then does `decodedHoldsTagged` know the tables amqplib hands over.
   */
  decodesWithThisCopy: boolean;
}

/**
 * Loads amqplib with `decodeFieldTable` installed as its field-table decoder. amqplib's `defs.js` copies
 * `codec.decodeFields` into a local when it is first loaded, so the replacement must happen before that: this
 * module loads `lib/codec.js` by path (the package's `exports` map hides it), swaps the function, then loads
 * amqplib. Loading by path through `require.resolve` finds the same file amqplib uses (one CommonJS cache).
 */
function loadAmqplib(): LoadedAmqplib {
  const require = createRequire(import.meta.url);
  const libDir = join(dirname(require.resolve('amqplib')), 'lib');
  const defsAlreadyLoaded = require.cache[join(libDir, 'defs.js')] !== undefined;
  const codec = require(join(libDir, 'codec.js')) as AmqplibCodec;
  let installed: AmqplibCodec['decodeFields'] | undefined;
  if (!defsAlreadyLoaded && codec.decodeFields[TOLERANT] !== true) {
    installed = Object.assign((slice: Buffer) => decodeFieldTable(slice), { [TOLERANT]: true as const });
    codec.decodeFields = installed;
  }
  const amqplib = require('amqplib') as typeof Amqplib;
  // Patched before defs.js loaded (by this or an earlier copy of this module) ⇒ amqplib uses it.
  return {
    amqplib,
    tolerantFieldTables: codec.decodeFields[TOLERANT] === true,
    decodesWithThisCopy: installed !== undefined && codec.decodeFields === installed,
  };
}

export const { amqplib, tolerantFieldTables, decodesWithThisCopy } = loadAmqplib();

export type {
  Channel as AmqplibChannel,
  ChannelModel as AmqplibConnection,
  ConfirmChannel as AmqplibConfirmChannel,
  ConsumeMessage as AmqplibConsumeMessage,
  GetMessage as AmqplibGetMessage,
  Message as AmqplibMessage,
  MessageProperties as AmqplibMessageProperties,
  Options as AmqplibOptions,
} from 'amqplib';
