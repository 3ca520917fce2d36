// The one HTTP refusal: a status, a message and headers, rendered by itself as the endpoint that refused speaks.
import type { ServerResponse } from 'node:http';

/** The error code of the board's JSON body for a status (the MCP endpoints answer JSON-RPC instead). */
const CODES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'FORBIDDEN',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'INVALID_ARGUMENT',
  413: 'VALUE_TOO_LARGE',
  503: 'STORE_UNAVAILABLE',
};

/**
 * A refused HTTP request. Thrown anywhere below a route; the route's catch sends {@link HttpError.send}. `jsonrpc`
 * (the MCP endpoints) answers `{"jsonrpc":"2.0","error":{"code":-32000,"message"},"id":null}`; `json` (the board)
 * answers `{"error":{"code","message"}}` with a code from the status.
 */
export class HttpError extends Error {
  override name = 'HttpError';

  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** the JSON-RPC error an MCP endpoint answers with (default: -32000, no id) */
    readonly rpc: { code: number; id: string | number | null } = { code: -32000, id: null },
  ) {
    super(message);
  }

  /** The board's error code for this refusal. */
  get code(): string {
    return CODES[this.status] ?? 'INVALID_ARGUMENT';
  }

  /** The status, headers and body of the response, in the shape the endpoint speaks. */
  getResponse(shape: 'jsonrpc' | 'json'): { status: number; headers: Record<string, string>; body: string } {
    const body =
      shape === 'jsonrpc'
        ? { jsonrpc: '2.0', error: { code: this.rpc.code, message: this.message }, id: this.rpc.id }
        : { error: { code: this.code, message: this.message } };
    return { status: this.status, headers: { 'content-type': 'application/json', ...this.headers }, body: JSON.stringify(body) };
  }

  /** Writes the response; `extra` headers (e.g. `connection: close`) go beside the error's own. */
  send(res: ServerResponse, shape: 'jsonrpc' | 'json', extra: Record<string, string> = {}): void {
    const { status, headers, body } = this.getResponse(shape);
    res.writeHead(status, { ...headers, ...extra }).end(body);
  }
}
