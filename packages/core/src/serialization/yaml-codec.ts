import { DecodeError, EncodeError, OptionalDependencyMissing } from '../errors';
import { bodyPreview, type Codec } from './codec';

let loading: Promise<Codec> | undefined;

/**
 * The yaml serializer (`application/x-yaml`, utf-8), as kombu's (PyYAML `safe_dump` / `safe_load`): plain data only.
 * `yaml` is an optional peer dependency, imported on first use; without it this rejects with
 * `OptionalDependencyMissing`.
 */
export function loadYamlCodec(): Promise<Codec> {
  loading ??= import('yaml').then(
    (yaml): Codec => ({
      name: 'yaml',
      contentType: 'application/x-yaml',
      contentEncoding: 'utf-8',
      encode(value: unknown): Buffer {
        try {
          return Buffer.from(yaml.stringify(value), 'utf8');
        } catch (error) {
          throw new EncodeError(`Cannot serialize the value as yaml: ${messageOf(error)}`, { cause: error });
        }
      },
      decode(body: Buffer): unknown {
        try {
          // YAML 1.1, as PyYAML writes and reads it (yes/no booleans, sexagesimal numbers stay Python's).
          return yaml.parse(body.toString('utf8'), { version: '1.1' });
        } catch (error) {
          throw new DecodeError(`Cannot decode an application/x-yaml body: ${messageOf(error)}. Body: ${bodyPreview(body)}`, { cause: error });
        }
      },
    }),
    (error: unknown) => {
      loading = undefined;
      throw new OptionalDependencyMissing('yaml', 'The yaml serializer', { cause: error });
    },
  );
  return loading;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
