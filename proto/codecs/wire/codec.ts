/**
 * Hand-written binary codecs of a method's messages, for the hot batched
 * calls where protobuf-es's reflection is most of the cost of the hop. Each
 * must produce and read exactly what protobuf-es would
 * (test/in-memory/fast-codecs.test.ts checks that); a missing one falls back
 * to protobuf-es. The runtime's unary transport and server take them
 * (packages/runtime/src/unary.ts).
 */
export interface WireCodec {
  decodeRequest?(bytes: Uint8Array): unknown;
  encodeResponse?(message: never): Uint8Array;
  encodeRequest?(message: never): Uint8Array;
  decodeResponse?(bytes: Uint8Array): unknown;
}

/** Codecs by Connect path, "/<service>/<Method>". */
export type WireCodecs = Record<string, WireCodec>;
