import http from "node:http";
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  fromBinary,
  isMessage,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createContextValues,
  createHandlerContext,
  type HandlerContext,
  type ServiceImpl,
  type Transport,
  type UnaryResponse,
} from "@connectrpc/connect";
import {
  codeFromHttpStatus,
  codeToHttpStatus,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { rpcDuration } from "./metrics.ts";

/**
 * The Connect protocol's unary calls with binary protobuf and no compression,
 * the only kind Latchkey's processes make to each other, without connect's
 * general machinery per call (linked abort signals, header objects, stream
 * adapters, interceptor chains). PERFORMANCE.md measured that machinery as the
 * cost of a call; batching amortises it over the items of a batch, and this
 * removes most of what is left. On the wire it is the Connect protocol: any
 * Connect client can call a served method, and the client below can call any
 * Connect server. Everything else (JSON, compression, gRPC, gRPC-Web,
 * deadlines) still goes through connect's own adapter.
 */

type Headers_ = Parameters<Transport["unary"]>[3];

/**
 * Hand-written binary codecs of a method's messages, for the hot batched
 * calls where protobuf-es's reflection is most of the cost of the hop. Each
 * must produce and read exactly what protobuf-es would (the owning service
 * tests that); a missing one falls back to protobuf-es.
 */
export interface WireCodec {
  decodeRequest?(bytes: Uint8Array): unknown;
  encodeResponse?(message: never): Uint8Array;
  encodeRequest?(message: never): Uint8Array;
  decodeResponse?(bytes: Uint8Array): unknown;
}

/** Codecs by Connect path, "/<service>/<Method>". */
export type WireCodecs = Record<string, WireCodec>;
type UnaryImpl = (req: unknown, ctx: HandlerContext) => unknown;

export interface UnaryMethod {
  method: DescMethod;
  impl: UnaryImpl;
  /** The method's histogram child for successful calls, looked up once. */
  ok: ReturnType<typeof rpcDuration.labels>;
}

/** A service implementation routes register, kept so it can be registered again elsewhere. */
export interface RegisteredService {
  service: DescService;
  impl: Partial<ServiceImpl<DescService>>;
}

/** Runs `routes` against a recorder: the services it registers, with their implementations. */
export function registeredServices(routes: (router: ConnectRouter) => void): RegisteredService[] {
  const services: RegisteredService[] = [];
  const recorder = {
    service(service: DescService, impl: Partial<ServiceImpl<DescService>>) {
      services.push({ service, impl });
      return recorder;
    },
    rpc() {
      throw new Error("register whole services with router.service(), not single methods");
    },
  };
  routes(recorder as unknown as ConnectRouter);
  return services;
}

/** The unary methods of registered services, by their Connect path "/<service>/<Method>". */
export function unaryMethods(services: RegisteredService[]): Map<string, UnaryMethod> {
  const methods = new Map<string, UnaryMethod>();
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      methods.set(`/${service.typeName}/${method.name}`, {
        method,
        impl: fn.bind(impl) as UnaryImpl,
        ok: rpcDuration.labels({ service: service.typeName, method: method.name, code: "ok" }),
      });
    }
  }
  return methods;
}

/**
 * Calls one implementation: the request as a message, the answer made one,
 * any failure as the ConnectError a remote caller would see, timed in
 * latchkey_rpc_duration_seconds.
 */
export async function invokeUnary(
  { method, impl, ok }: UnaryMethod,
  input: unknown,
  init: { signal?: AbortSignal; timeoutMs?: number; header?: Headers_; protocol: string },
): Promise<{ message: unknown; context: HandlerContext }> {
  const started = performance.now();
  const context: HandlerContext & { abort(reason?: unknown): void } =
    init.signal === undefined && init.timeoutMs === undefined
      ? new CallContext(method, init.protocol, init.header)
      : createHandlerContext({
          service: method.parent,
          method,
          protocolName: init.protocol,
          requestMethod: "POST",
          url: `/${method.parent.typeName}/${method.name}`,
          ...(init.signal ? { requestSignal: init.signal } : {}),
          ...(init.timeoutMs !== undefined ? { timeoutMs: init.timeoutMs } : {}),
          ...(init.header ? { requestHeader: init.header } : {}),
        });
  try {
    const request = isMessage(input, method.input) ? input : create(method.input, input as never);
    const answer = await impl(request, context);
    const message = isMessage(answer, method.output) ? answer : create(method.output, answer as never);
    ok.observe((performance.now() - started) / 1000);
    return { message, context };
  } catch (err) {
    const error = ConnectError.from(err, Code.Internal);
    rpcDuration.observe(
      { service: method.parent.typeName, method: method.name, code: Code[error.code] ?? "unknown" },
      (performance.now() - started) / 1000,
    );
    throw error;
  } finally {
    // Clears the deadline's timer; without a deadline there is none (and no abort to pay for).
    if (init.timeoutMs !== undefined) context.abort();
  }
}

/** CallContext's timeoutMs: a call without a deadline has none. */
const noDeadline = (): number | undefined => undefined;

/**
 * The context of a call with no deadline and no signal to follow, which is every call Latchkey's
 * processes make to each other. connect's createHandlerContext builds two abort controllers, three
 * Headers and the context values up front: about 18 µs per call on the 2-core VM the bench runs on,
 * against 0.5 µs for this. Handlers read almost none of them, so here each is built the first time
 * it is read. What is read is the same.
 */
export class CallContext implements HandlerContext {
  readonly requestMethod = "POST";
  private controller: AbortController | undefined;
  private request: Headers | undefined;
  private response: Headers | undefined;
  private trailer: Headers | undefined;
  private contextValues: ContextValues | undefined;

  constructor(
    readonly method: DescMethod,
    readonly protocolName: string,
    private readonly header?: Headers_,
  ) {}

  get service(): DescService {
    return this.method.parent;
  }
  get url(): string {
    return `/${this.method.parent.typeName}/${this.method.name}`;
  }
  readonly timeoutMs = noDeadline;
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }
  get requestHeader(): Headers {
    this.request ??= new Headers(this.header);
    return this.request;
  }
  get responseHeader(): Headers {
    this.response ??= new Headers();
    return this.response;
  }
  get responseTrailer(): Headers {
    this.trailer ??= new Headers();
    return this.trailer;
  }
  get values(): ContextValues {
    this.contextValues ??= createContextValues();
    return this.contextValues;
  }
  /** Aborts the signal, if anyone has asked for it. */
  abort(reason?: unknown): void {
    this.controller?.abort(reason);
  }
}

const PROTO = "application/proto";
/** Larger request bodies are refused: batches stay far below (512 items). */
const MAX_BODY = 64 * 1024 * 1024;

/**
 * The server side: a request listener that answers a Connect unary call with
 * binary protobuf and no compression or deadline, or answers false so the
 * caller hands the request to connect's adapter.
 */
export function unaryFastPath(methods: Map<string, UnaryMethod>, codecs: WireCodecs = {}) {
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    if (req.method !== "POST") return false;
    const h = req.headers;
    if (h["content-type"] !== PROTO || h["content-encoding"] !== undefined) return false;
    if (h["connect-timeout-ms"] !== undefined) return false;
    const path = req.url ?? "";
    const served = methods.get(path);
    if (served === undefined) return false;
    const codec = codecs[path];
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on("end", () => {
      if (size > MAX_BODY) {
        return sendError(
          res,
          new ConnectError(`request larger than ${MAX_BODY} bytes`, Code.ResourceExhausted),
        );
      }
      let input: unknown;
      try {
        const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        input = codec?.decodeRequest ? codec.decodeRequest(bytes) : fromBinary(served.method.input, bytes);
      } catch (err) {
        return sendError(res, ConnectError.from(err, Code.InvalidArgument));
      }
      invokeUnary(served, input, { protocol: "connect" }).then(
        ({ message }) => {
          const body = codec?.encodeResponse
            ? codec.encodeResponse(message as never)
            : toBinary(served.method.output, message as never);
          res.writeHead(200, { "content-type": PROTO, "content-length": body.length });
          res.end(body);
        },
        (err: ConnectError) => sendError(res, err),
      );
    });
    return true;
  };
}

function sendError(res: http.ServerResponse, err: ConnectError) {
  const body = errorToJsonBytes(err, {});
  res.writeHead(codeToHttpStatus(err.code), {
    "content-type": "application/json",
    "content-length": body.length,
  });
  res.end(body);
}

/**
 * The client side: a Transport making Connect unary calls with binary
 * protobuf over HTTP/1.1 keep-alive, one request per call. Streaming calls go
 * to `streams` (connect's own transport).
 */
export function unaryTransport(baseUrl: string, streams: Transport, codecs: WireCodecs = {}): Transport {
  const url = new URL(baseUrl);
  if (url.protocol !== "http:")
    throw new Error(`unaryTransport speaks http:, not ${url.protocol} (${baseUrl})`);
  const agent = new http.Agent({ keepAlive: true, scheduling: "lifo" });
  const prefix = url.pathname.replace(/\/$/, "");
  const target = { host: url.hostname, port: url.port || 80 };
  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Headers_,
      input: MessageInitShape<I>,
    ): Promise<UnaryResponse<I, O>> {
      return new Promise((resolve, reject) => {
        const codec = codecs[`/${method.parent.typeName}/${method.name}`];
        let body: Uint8Array;
        try {
          const message = isMessage(input, method.input) ? input : create(method.input, input);
          body = codec?.encodeRequest
            ? codec.encodeRequest(message as never)
            : toBinary(method.input, message);
        } catch (err) {
          return reject(ConnectError.from(err, Code.Internal));
        }
        const headers: http.OutgoingHttpHeaders = {
          "content-type": PROTO,
          "connect-protocol-version": "1",
          "content-length": body.length,
        };
        if (timeoutMs !== undefined)
          headers["connect-timeout-ms"] = String(Math.max(1, Math.ceil(timeoutMs)));
        if (header !== undefined) {
          new Headers(header).forEach((value, key) => {
            headers[key] = value;
          });
        }
        const req = http.request(
          {
            ...target,
            agent,
            method: "POST",
            path: `${prefix}/${method.parent.typeName}/${method.name}`,
            headers,
            ...(signal ? { signal } : {}),
            ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("error", (err) => reject(ConnectError.from(err, Code.Unavailable)));
            res.on("end", () => {
              const data = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
              const status = res.statusCode ?? 0;
              if (status === 200 && res.headers["content-type"] === PROTO) {
                try {
                  const message = codec?.decodeResponse
                    ? codec.decodeResponse(data)
                    : fromBinary(method.output, data);
                  resolve({
                    stream: false,
                    service: method.parent,
                    method,
                    header: new Headers(),
                    trailer: new Headers(),
                    message,
                  } as UnaryResponse<I, O>);
                } catch (err) {
                  reject(ConnectError.from(err, Code.Internal));
                }
                return;
              }
              const fallback = new ConnectError(`HTTP ${status}`, codeFromHttpStatus(status));
              try {
                reject(errorFromJsonBytes(data, undefined, fallback));
              } catch {
                reject(fallback);
              }
            });
          },
        );
        req.on("timeout", () => req.destroy(new ConnectError("the deadline passed", Code.DeadlineExceeded)));
        req.on("error", (err) => {
          if (err instanceof ConnectError) return reject(err);
          if (signal?.aborted) return reject(new ConnectError("the call was canceled", Code.Canceled));
          reject(ConnectError.from(err, Code.Unavailable));
        });
        req.end(body);
      });
    },
    stream: (...args) => streams.stream(...args),
  };
}
