import type { DescMethod, DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type HandlerContext,
  type Transport,
  type UnaryResponse,
} from "@connectrpc/connect";
import { invokeUnary, registeredServices, unaryMethods } from "./unary.ts";

/** A local call's answer; its header and trailer are read from the context only when asked for (see CallContext). */
class LocalResponse {
  readonly stream = false;
  constructor(
    readonly method: DescMethod,
    private readonly context: HandlerContext,
    readonly message: unknown,
  ) {}
  get service(): DescService {
    return this.method.parent;
  }
  get header(): Headers {
    return this.context.responseHeader;
  }
  get trailer(): Headers {
    return this.context.responseTrailer;
  }
}

/**
 * A transport that calls a service's implementation in this process: the
 * all-in-one `npm start`. Unlike connect's createRouterTransport, which runs
 * the whole protocol in memory (serialise, frame, parse, both ways), a call is
 * a function call: the request message is handed over as is and the answer is
 * made a message with create(). Errors surface as the ConnectError a remote
 * call would raise, and calls are timed in latchkey_rpc_duration_seconds like
 * served ones.
 *
 * Caller and callee share the messages, so neither may change one after the
 * call (no service or the gateway does: requests are read, answers are mapped
 * into new objects). Only unary methods are served; Latchkey has no streams.
 */
export function localTransport(routes: (router: ConnectRouter) => void): Transport {
  const methods = unaryMethods(registeredServices(routes));
  return {
    async unary(method, signal, timeoutMs, header, input) {
      const served = methods.get(`/${method.parent.typeName}/${method.name}`);
      if (served === undefined) {
        throw new ConnectError(
          `${method.parent.typeName}/${method.name} is not served here`,
          Code.Unimplemented,
        );
      }
      const { message, context } = await invokeUnary(served, input, {
        protocol: "local",
        ...(signal ? { signal } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(header ? { header } : {}),
      });
      return new LocalResponse(method, context, message) as unknown as UnaryResponse<never, never>;
    },
    stream() {
      return Promise.reject(
        new ConnectError("streaming calls are not served in process", Code.Unimplemented),
      );
    },
  };
}
