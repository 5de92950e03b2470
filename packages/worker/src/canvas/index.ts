// Canvas: composing tasks as Celery does, on its wire format. Importing this module registers every composite type.
export { Signature, type AnySignature, type FreezeOptions } from './signature';
export { type CelerySignatureOptions, type SignatureConstructorOptions, type SignatureOptions, type WireOptions, toWireOptions } from './signature-options';
export { Group, group, type GroupOf, type ResultsOf, type SignatureInput } from './group';
export { Chord, chord } from './chord';
export { Chain, chain } from './chain';
export { MapSignature, Chunks } from './map';
export { onChordPartReturn, failChord, type ChordMember } from './chord-completion';
export type { ErrbackCaller, ErrbackRequest } from './errback-caller';
export { builtinTasks, type BuiltinContext, type BuiltinHost, type BuiltinTask } from './builtin-tasks';
export { pipe } from './pipe';
