import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';

// ioredis is loaded with `require`, from the ES module build too. Node 20 lexes every CommonJS file an ES module
// imports, and the files those require, to find their named exports: all of ioredis's, about 40 ms of CPU at every
// process start (most of it compiling the lexer), for three names taken from one object.
const ioredis = createRequire(import.meta.url)('ioredis') as typeof IORedis;

export const Redis = ioredis.Redis;
export type Redis = IORedis.Redis;
export const Cluster = ioredis.Cluster;
export type Cluster = IORedis.Cluster;
export const Command = ioredis.Command;
export type Command = IORedis.Command;
