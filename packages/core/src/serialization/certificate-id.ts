import { SecurityError } from '../errors';

/*
 * Celery names the signer of a message by its certificate's issuer and serial number (`Certificate.get_id()`): the
 * issuer's attribute values in the order the certificate holds them, joined by spaces, then a space and the serial
 * number in decimal — `"US Acme worker 5142..."`. node:crypto prints the issuer only as escaped text, so the values
 * are read from the certificate's DER here: Certificate → tbsCertificate → [version], serialNumber, signature, issuer.
 */

interface DerElement {
  tag: number;
  /** The contents (without tag and length). */
  value: Buffer;
  /** Offset of the next element after this one. */
  end: number;
}

const TAG_INTEGER = 0x02;
const TAG_SEQUENCE = 0x30;
const TAG_SET = 0x31;
const TAG_VERSION = 0xa0;
const TAG_BMP_STRING = 0x1e;
const TAG_UNIVERSAL_STRING = 0x1c;

/** Celery's id for the certificate whose DER encoding is `der` (`X509Certificate.raw`). */
export function celeryCertificateId(der: Buffer): string {
  const certificate = readElement(der, 0, TAG_SEQUENCE);
  const tbs = readElement(certificate.value, 0, TAG_SEQUENCE);
  let offset = 0;
  let element = readElement(tbs.value, offset);
  if (element.tag === TAG_VERSION) element = readElement(tbs.value, element.end);
  if (element.tag !== TAG_INTEGER) throw malformed('the serial number is not an INTEGER');
  const serial = signedInteger(element.value);
  const algorithm = readElement(tbs.value, element.end, TAG_SEQUENCE);
  const issuer = readElement(tbs.value, algorithm.end, TAG_SEQUENCE);
  const values: string[] = [];
  for (offset = 0; offset < issuer.value.length; ) {
    const rdn = readElement(issuer.value, offset, TAG_SET);
    for (let inner = 0; inner < rdn.value.length; ) {
      const attribute = readElement(rdn.value, inner, TAG_SEQUENCE);
      const type = readElement(attribute.value, 0);
      values.push(attributeText(readElement(attribute.value, type.end)));
      inner = attribute.end;
    }
    offset = rdn.end;
  }
  return `${values.join(' ')} ${serial}`;
}

/** What Python's `cryptography` gives as `NameAttribute.value`: BMP and Universal strings by their encodings, the rest as UTF-8. */
function attributeText(element: DerElement): string {
  if (element.tag === TAG_BMP_STRING) {
    if (element.value.length % 2 !== 0) throw malformed('a BMPString has an odd length');
    return Buffer.from(element.value).swap16().toString('utf16le');
  }
  if (element.tag === TAG_UNIVERSAL_STRING) {
    const codePoints: number[] = [];
    for (let i = 0; i + 4 <= element.value.length; i += 4) codePoints.push(element.value.readUInt32BE(i));
    return String.fromCodePoint(...codePoints);
  }
  return element.value.toString('utf8');
}

/** A DER INTEGER's contents as a decimal string (two's complement, as Python's int.from_bytes(signed=True)). */
function signedInteger(bytes: Buffer): string {
  if (bytes.length === 0) throw malformed('the serial number is empty');
  let value = BigInt(`0x${bytes.toString('hex')}`);
  if ((bytes[0] as number) & 0x80) value -= 1n << BigInt(bytes.length * 8);
  return value.toString(10);
}

function readElement(buffer: Buffer, offset: number, expectedTag?: number): DerElement {
  if (offset + 2 > buffer.length) throw malformed('it ends early');
  const tag = buffer[offset] as number;
  if (expectedTag !== undefined && tag !== expectedTag) throw malformed(`expected tag 0x${expectedTag.toString(16)}, found 0x${tag.toString(16)}`);
  let length = buffer[offset + 1] as number;
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4 || start + octets > buffer.length) throw malformed('a length is invalid');
    length = buffer.readUIntBE(start, octets);
    start += octets;
  }
  const end = start + length;
  if (end > buffer.length) throw malformed('an element runs past its end');
  return { tag, value: buffer.subarray(start, end), end };
}

function malformed(why: string): SecurityError {
  return new SecurityError(`Invalid certificate: its DER encoding cannot be read (${why}). Give a PEM X.509 certificate.`);
}
