import { create, type DescMessage, type DescMethod, type DescService, isMessage } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createHandlerContext,
  type Transport,
  type UnaryResponse,
} from "@connectrpc/connect";
import { rpcDuration } from "./metrics.ts";

type UnaryImpl = (req: unknown, ctx: ReturnType<typeof createHandlerContext>) => unknown;

/**
 * A transport that calls a service's implementation in this process: the
 * all-in-one `pnpm start`. Unlike connect's createRouterTransport, which runs
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
  const impls = new Map<DescMethod, UnaryImpl>();
  const collect = {
    service(service: DescService, impl: Record<string, unknown>) {
      for (const method of service.methods) {
        const fn = impl[method.localName];
        if (typeof fn === "function") impls.set(method, fn.bind(impl) as UnaryImpl);
      }
      return collect;
    },
  };
  routes(collect as unknown as ConnectRouter);

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: Parameters<Transport["unary"]>[0],
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport["unary"]>[3],
      input: Parameters<Transport["unary"]>[4],
    ): Promise<UnaryResponse<I, O>> {
      const impl = impls.get(method);
      const labels = { service: method.parent.typeName, method: method.name };
      if (impl === undefined) {
        throw new ConnectError(`${labels.service}/${labels.method} is not served here`, Code.Unimplemented);
      }
      const end = rpcDuration.startTimer(labels);
      try {
        const request = isMessage(input, method.input) ? input : create(method.input, input);
        const context = createHandlerContext({
          service: method.parent,
          method,
          protocolName: "local",
          requestMethod: "POST",
          url: `local:///${labels.service}/${labels.method}`,
          ...(signal ? { requestSignal: signal } : {}),
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          ...(header ? { requestHeader: header } : {}),
        });
        let answer: unknown;
        try {
          answer = await impl(request, context);
        } finally {
          // Clears the deadline's timer; without a deadline there is none (and no abort to pay for).
          if (timeoutMs !== undefined) context.abort();
        }
        const message = isMessage(answer, method.output) ? answer : create(method.output, answer as never);
        end({ code: "ok" });
        return {
          stream: false,
          service: method.parent,
          method,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message,
        } as unknown as UnaryResponse<I, O>;
      } catch (err) {
        const error = ConnectError.from(err);
        end({ code: Code[error.code] ?? "unknown" });
        throw error;
      }
    },
    stream() {
      return Promise.reject(
        new ConnectError("streaming calls are not served in process", Code.Unimplemented),
      );
    },
  };
}
