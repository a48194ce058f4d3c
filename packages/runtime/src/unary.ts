import type http from "node:http";
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
import type { WireCodecs } from "@latchkey/proto/codecs/wire/codec";
import { callErrorOf } from "./errors.ts";
import { Http1Client } from "./http1-client.ts";
import { INTERNAL_AUTH_HEADER, type InternalAuth, type OpenedAssertion } from "./internal-auth.ts";
import { rpcDuration } from "./metrics.ts";

/**
 * The Connect protocol's unary calls with binary protobuf and no compression,
 * the only kind Latchkey's processes make to each other, without connect's
 * general machinery per call (linked abort signals, header objects, stream
 * adapters, interceptor chains). That machinery was measured as the
 * cost of a call (docs/architecture.md); batching amortises it over the items of a batch, and this
 * removes most of what is left. On the wire it is the Connect protocol: any
 * Connect client can call a served method, and the client below can call any
 * Connect server. Everything else (JSON, compression, gRPC, gRPC-Web)
 * still goes through connect's own adapter.
 */

type Headers_ = Parameters<Transport["unary"]>[3];

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
    init.signal === undefined
      ? new CallContext(method, init.protocol, init.header, init.timeoutMs)
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
    const error = callErrorOf(err);
    rpcDuration.observe(
      { service: method.parent.typeName, method: method.name, code: Code[error.code] ?? "unknown" },
      (performance.now() - started) / 1000,
    );
    throw error;
  } finally {
    // Clears the deadline's timer, if a handler asked for the signal; otherwise there is none.
    if (init.timeoutMs !== undefined) context.abort();
  }
}

/**
 * The context of a call with no signal to follow, which is every call Latchkey's processes make to
 * each other. connect's createHandlerContext builds two abort controllers, three Headers and the
 * context values up front (and a timer for a deadline), most of a call's cost once calls are batched
 * (docs/architecture.md). Handlers read almost none of them, so here each is built
 * the first time it is read; a deadline costs a timer only once a handler asks for the signal. What
 * is read is the same.
 */
export class CallContext implements HandlerContext {
  readonly requestMethod = "POST";
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private request: Headers | undefined;
  private response: Headers | undefined;
  private trailer: Headers | undefined;
  private contextValues: ContextValues | undefined;
  /** When the deadline passes, in Date.now() milliseconds; undefined without one. */
  private readonly deadline: number | undefined;

  constructor(
    readonly method: DescMethod,
    readonly protocolName: string,
    private readonly header?: Headers_,
    timeoutMs?: number,
  ) {
    this.deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  }

  get service(): DescService {
    return this.method.parent;
  }
  get url(): string {
    return `/${this.method.parent.typeName}/${this.method.name}`;
  }
  /** What is left of the call's deadline, in milliseconds; undefined without one. */
  timeoutMs(): number | undefined {
    return this.deadline === undefined ? undefined : Math.max(0, this.deadline - Date.now());
  }
  /** Aborted when the deadline passes (DeadlineExceeded) or the call ends. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      const left = this.timeoutMs();
      if (left !== undefined) {
        this.timer = setTimeout(
          () => controller.abort(new ConnectError("the deadline passed", Code.DeadlineExceeded)),
          left,
        );
        this.timer.unref();
      }
    }
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
  /** Aborts the signal, if anyone has asked for it, and clears its deadline's timer. */
  abort(reason?: unknown): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.controller?.abort(reason);
  }
}

const PROTO = "application/proto";
/** Larger request bodies are refused: batches stay far below (512 items). */
const MAX_BODY = 64 * 1024 * 1024;

/** A Connect deadline header: 1 to 10 digits of milliseconds. */
const TIMEOUT = /^[0-9]{1,10}$/;

/**
 * The server side: a request listener that answers a Connect unary call with
 * binary protobuf and no compression, or answers false so the caller hands
 * the request to connect's adapter. With `auth`, a call the gateway did not
 * vouch for (internal-auth.ts) is refused Unauthenticated: one without a
 * valid, unexpired header before its body is read, one whose signature does
 * not match its method and callers as soon as they are decoded, before the
 * implementation sees it.
 */
export function unaryFastPath(
  methods: Map<string, UnaryMethod>,
  codecs: WireCodecs,
  auth: InternalAuth | "none",
) {
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    if (req.method !== "POST") return false;
    const h = req.headers;
    if (h["content-type"] !== PROTO || h["content-encoding"] !== undefined) return false;
    const timeout = h["connect-timeout-ms"] as string | undefined;
    // A malformed deadline is answered by connect's adapter, in its words.
    if (timeout !== undefined && !TIMEOUT.test(timeout)) return false;
    const path = req.url ?? "";
    const served = methods.get(path);
    if (served === undefined) return false;
    let assertion: OpenedAssertion | undefined;
    if (auth !== "none") {
      try {
        assertion = auth.open(h[INTERNAL_AUTH_HEADER] as string | undefined);
      } catch (err) {
        // The body is left unread; node discards it so the connection can carry the next call.
        sendError(res, err as ConnectError);
        return true;
      }
    }
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
      if (assertion !== undefined) {
        try {
          (auth as InternalAuth).verify(assertion, path, input);
        } catch (err) {
          return sendError(res, err as ConnectError);
        }
      }
      invokeUnary(served, input, {
        protocol: "connect",
        ...(timeout !== undefined ? { timeoutMs: Number(timeout) } : {}),
      }).then(
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
 * protobuf over HTTP/1.1 keep-alive, one request per call, through
 * Http1Client (http1-client.ts) rather than node:http's client, whose
 * per-call objects were most of what a call cost its caller. Streaming calls
 * go to `streams` (connect's own transport).
 *
 * A call with `timeoutMs` sends it as connect-timeout-ms and fails with
 * DeadlineExceeded when no whole answer has come by then, its connection
 * closed (a held connection is never reused); one with `signal` fails with
 * Canceled when it aborts. Each costs one timer or listener, only when given.
 */
export function unaryTransport(baseUrl: string, streams: Transport, codecs: WireCodecs = {}): Transport {
  const url = new URL(baseUrl);
  if (url.protocol !== "http:")
    throw new Error(`unaryTransport speaks http:, not ${url.protocol} (${baseUrl})`);
  const client = new Http1Client(url.hostname, Number(url.port || 80));
  const prefix = url.pathname.replace(/\/$/, "");
  const host = `Host: ${url.host}\r\n`;
  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Headers_,
      input: MessageInitShape<I>,
    ): Promise<UnaryResponse<I, O>> {
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(new ConnectError("the call was canceled", Code.Canceled));
        const path = `/${method.parent.typeName}/${method.name}`;
        const codec = codecs[path];
        let body: Uint8Array;
        let head: string;
        try {
          const message = isMessage(input, method.input) ? input : create(method.input, input);
          body = codec?.encodeRequest
            ? codec.encodeRequest(message as never)
            : toBinary(method.input, message);
          head = `POST ${prefix}${path} HTTP/1.1\r\n${host}Content-Type: ${PROTO}\r\nConnect-Protocol-Version: 1\r\n`;
          if (timeoutMs !== undefined) head += `Connect-Timeout-Ms: ${Math.max(1, Math.ceil(timeoutMs))}\r\n`;
          if (header !== undefined) head += headerLines(header);
        } catch (err) {
          return reject(ConnectError.from(err, Code.Internal));
        }
        let timer: NodeJS.Timeout | undefined;
        let onAbort: (() => void) | undefined;
        const settle = () => {
          if (timer !== undefined) clearTimeout(timer);
          if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
        };
        client
          .post(head, body, (end) => {
            if (timeoutMs !== undefined) {
              timer = setTimeout(
                () => end(new ConnectError(`no answer within ${timeoutMs} ms`, Code.DeadlineExceeded)),
                timeoutMs,
              );
            }
            if (signal !== undefined) {
              onAbort = () => end(new ConnectError("the call was canceled", Code.Canceled));
              signal.addEventListener("abort", onAbort);
            }
          })
          .then(
            (answer) => {
              settle();
              const status = answer.status;
              if (status === 200 && answer.contentType === PROTO) {
                try {
                  const message = codec?.decodeResponse
                    ? codec.decodeResponse(answer.body)
                    : fromBinary(method.output, answer.body);
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
                reject(errorFromJsonBytes(answer.body, undefined, fallback));
              } catch {
                reject(fallback);
              }
            },
            (err: unknown) => {
              settle();
              reject(err instanceof ConnectError ? err : ConnectError.from(err, Code.Unavailable));
            },
          );
      });
    },
    stream: (...args) => streams.stream(...args),
  };
}

/** A field's value may not hold a line break or other controls (node:http refuses them too). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for
const BAD_FIELD = /[\x00-\x08\x0a-\x1f\x7f]/;
/** A field's name is a token. */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A call's extra headers as request lines; a plain record (what signedTransport gives) without a Headers. */
function headerLines(header: NonNullable<Headers_>): string {
  let lines = "";
  const add = (key: string, value: string) => {
    if (!FIELD_NAME.test(key) || BAD_FIELD.test(value))
      throw new Error(`a request field that cannot be sent: ${JSON.stringify(key)}`);
    lines += `${key}: ${value}\r\n`;
  };
  if (header instanceof Headers || Array.isArray(header)) {
    new Headers(header).forEach((value, key) => {
      add(key, value);
    });
    return lines;
  }
  for (const key in header) add(key.toLowerCase(), String(header[key]));
  return lines;
}
