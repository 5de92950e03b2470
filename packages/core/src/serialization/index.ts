export { AUTH_SERIALIZER, type Codec } from './codec';
export { jsonCodec } from './json-codec';
export { rawCodec } from './raw-codec';
export { loadMsgpackCodec } from './msgpack-codec';
export { loadYamlCodec } from './yaml-codec';
export { loadBzip2Compression } from './bzip2-compression';
export { type CompressionMethod, registerCompression, hasCompression, compress, decompress } from './compression';
export {
  type EncodedBody,
  type EncodedMessage,
  type DecodeOptions,
  SerializerRegistry,
  defaultSerializers,
} from './serializer-registry';
export { type AuthSerializerOptions, createAuthSerializer } from './auth-serializer';
export { Certificate } from './certificate';
export { CertificateStore, loadCertificateStore } from './certificate-store';
export { type SignatureDigest, signatureDigest } from './rsa-pss-signature';
