import { randomFillSync } from 'node:crypto';

/**
 * Random version 4 UUIDs as `crypto.randomUUID()` writes them (lowercase, dashed), made for hot paths: every task
 * sent needs one or two (task id, delivery tag). Random bytes come from the same CSPRNG in batches, and each UUID is
 * one string made from a reused ASCII buffer — `crypto.randomUUID()` joins sixteen two-digit pieces, which costs
 * about twice the time and leaves ~1 KB of garbage per call.
 */
const BATCH_BYTES = 16 * 256;
const pool = Buffer.allocUnsafe(BATCH_BYTES);
let next = BATCH_BYTES;

const text = Buffer.from('00000000-0000-4000-8000-000000000000', 'latin1');
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** Where the two hex digits of each of the 16 bytes go in the 36-character form. */
const DIGIT_OFFSETS = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

export function randomUuid(): string {
  if (next === BATCH_BYTES) {
    randomFillSync(pool);
    next = 0;
  }
  const at = next;
  next += 16;
  for (let i = 0; i < 16; i++) {
    let byte = pool[at + i] as number;
    if (i === 6) byte = (byte & 0x0f) | 0x40; // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // RFC 4122 variant
    const offset = DIGIT_OFFSETS[i] as number;
    text[offset] = HEX_DIGITS[byte >> 4] as number;
    text[offset + 1] = HEX_DIGITS[byte & 0x0f] as number;
  }
  return text.toString('latin1', 0, 36);
}
