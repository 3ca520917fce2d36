// Reading stdin a line at a time for the stdio transport: a line over the size limit skipped (its request id found
// by its first and last bytes, when that can be told for sure), and the id of a line that is JSON but not a valid
// JSON-RPC request.
import type { RequestId } from '@modelcontextprotocol/server';

/** How much of an oversized message is kept to find its request id: the id is a top-level member near either end. */
const KEEP = 4096;

/** Details of a message that was skipped for its size. */
export interface OversizedMessage {
  /** the message's length in bytes (without its newline) */
  bytes: number;
  /** its request id, when it could be found at either end of the message */
  id?: RequestId;
}

/**
 * Splits a byte stream into lines. A line longer than `limit` bytes is never held in memory: its bytes are counted
 * and dropped up to the next newline, and `onOversized` is told, so the stream stays usable for the next message.
 */
export class LineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private skipped?: { head: Buffer; tail: Buffer; bytes: number };

  constructor(
    private readonly limit: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (message: OversizedMessage) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(10, start);
      this.take(chunk.subarray(start, newline === -1 ? chunk.length : newline));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    const skipped = this.skipped;
    if (skipped) {
      skipped.bytes += piece.length;
      skipped.tail = lastBytes(Buffer.concat([skipped.tail, piece.subarray(-KEEP)]));
      return;
    }
    if (this.size + piece.length <= this.limit) {
      this.chunks.push(piece);
      this.size += piece.length;
      return;
    }
    const all = Buffer.concat([...this.chunks, piece]);
    this.skipped = { head: Buffer.from(all.subarray(0, KEEP)), tail: lastBytes(all), bytes: all.length };
    this.chunks = [];
    this.size = 0;
  }

  private endLine(): void {
    const skipped = this.skipped;
    if (skipped) {
      this.skipped = undefined;
      this.onOversized({ bytes: skipped.bytes, id: findRequestId(skipped.head, skipped.tail) });
      return;
    }
    const line = Buffer.concat(this.chunks).toString('utf8');
    this.chunks = [];
    this.size = 0;
    this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }
}

function lastBytes(buffer: Buffer): Buffer {
  return Buffer.from(buffer.subarray(Math.max(0, buffer.length - KEEP)));
}

const STRING = String.raw`"(?:[^"\\]|\\.)*"`;
const NUMBER = String.raw`-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?`;
const SCALAR = `(?:${STRING}|${NUMBER}|true|false|null)`;
/** `"id"` among the first members of the top-level object, after only scalar members */
const ID_AT_HEAD = new RegExp(String.raw`^\s*\{\s*(?:${STRING}\s*:\s*${SCALAR}\s*,\s*)*?"id"\s*:\s*(${STRING}|${NUMBER})\s*[,}]`);
/** `"id"` as the last member: in valid JSON, the member just before the final `}` belongs to the top-level object */
const ID_AT_TAIL = new RegExp(String.raw`[{,]\s*"id"\s*:\s*(${STRING}|${NUMBER})\s*\}\s*$`);

/** The request id of a message known only by its first and last bytes, if it can be told for sure. */
export function findRequestId(head: Buffer, tail: Buffer): RequestId | undefined {
  const match = ID_AT_HEAD.exec(head.toString('utf8')) ?? ID_AT_TAIL.exec(tail.toString('utf8').replace(/\r$/, ''));
  if (!match) return undefined;
  const id = JSON.parse(match[1]) as unknown;
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : undefined;
}

/**
 * The id of a request that is not a valid JSON-RPC message (a JSON object with a `method`), when it has one a reply
 * can carry (a string or number): its client waits for an answer with that id.
 */
export function readableId(line: string): RequestId | undefined {
  const parsed: unknown = JSON.parse(line);
  const request = typeof parsed === 'object' && parsed !== null && 'method' in parsed ? (parsed as { id?: unknown }) : {};
  const id = request.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : undefined;
}
