export { type Codec } from './codec';
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
