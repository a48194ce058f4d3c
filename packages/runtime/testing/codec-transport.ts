import { type DescMethod, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Transport, UnaryResponse } from "@connectrpc/connect";
import type { WireCodecs } from "@latchkey/proto/codecs/wire/codec";

/**
 * `inner` with each call of a method in `codecs` crossing as bytes the way the
 * codec writes and reads them: the request encoded by the codec and decoded by
 * protobuf-es for the service, the answer encoded by protobuf-es and decoded by
 * the codec. For tests that run in memory and still exercise a process's codecs.
 */
export function throughCodecs(inner: Transport, codecs: WireCodecs): Transport {
  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const m: DescMethod = method;
      const codec = codecs[`/${m.parent.typeName}/${m.name}`];
      if (codec === undefined) return inner.unary(method, signal, timeoutMs, header, input, contextValues);
      const bytes = codec.encodeRequest
        ? codec.encodeRequest(input as never)
        : toBinary(m.input, input as never);
      const res = await inner.unary(
        method,
        signal,
        timeoutMs,
        header,
        fromBinary(m.input, bytes) as never,
        contextValues,
      );
      const answer = toBinary(m.output, res.message as never);
      const message = codec.decodeResponse ? codec.decodeResponse(answer) : fromBinary(m.output, answer);
      return { ...res, message } as UnaryResponse<never, never>;
    },
    stream: (...args) => inner.stream(...args),
  };
}
