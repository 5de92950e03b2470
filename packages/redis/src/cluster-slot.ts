/** Hash slots of a Redis Cluster (the key space is split into this many, spread over the masters). */
export const CLUSTER_SLOTS = 16_384;

/** CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the checksum Redis Cluster maps keys with; one table lookup per byte. */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

export function crc16(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/**
 * The part of a key Redis hashes: between the first `{` and the first `}` after it, when that is not empty (a hash
 * tag); else the whole key. Works on bytes, as Redis does.
 */
export function hashedPart(key: string | Uint8Array): Uint8Array {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const open = bytes.indexOf(0x7b);
  if (open < 0) return bytes;
  const close = bytes.indexOf(0x7d, open + 1);
  if (close < 0 || close === open + 1) return bytes;
  return bytes.subarray(open + 1, close);
}

/** The hash slot of a key (Redis's `CLUSTER KEYSLOT`). */
export function keySlot(key: string | Uint8Array): number {
  return crc16(hashedPart(key)) % CLUSTER_SLOTS;
}
