// Request bodies over HTTP: read under a bound, and a body over it read to its end (up to a second bound) so that its
// client, still sending, reads the 413 instead of a broken pipe.
import type { IncomingMessage } from 'node:http';
import { DEFAULT_MAX_REQUEST_BODY_SIZE } from '@modelcontextprotocol/server';
import type { Config } from '../config.js';
import { HttpError } from '../http-error.js';

/**
 * The largest request body read: the SDK's default (4 MiB), or more when `--max-value-bytes` allows values that would
 * not fit in it, so that any value the server accepts can be sent in one call (as over stdio).
 */
export const maxBodyBytes = (config: Pick<Config, 'maxValueBytes'>): number =>
  Math.max(DEFAULT_MAX_REQUEST_BODY_SIZE, config.maxValueBytes + 1024 * 1024);
/** How much of a body over the limit is still read (and dropped) so that its client can read the 413, not EPIPE. */
const DRAIN_BYTES = 64 * 1024 * 1024;
const DRAIN_MS = 10_000;

export const tooLarge = (bytes: number): HttpError =>
  new HttpError(
    413,
    `Payload too large: the request body is over ${bytes} bytes (the largest value, --max-value-bytes, plus 1 MiB; at least 4 MiB).`,
  );

/**
 * Reads and drops the rest of a request body, at most DRAIN_BYTES for at most DRAIN_MS; resolves with whether the body
 * ended (when not, the caller closes the connection).
 */
export function drain(req: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    let size = 0;
    const done = (ended: boolean): void => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onFail).off('close', onFail);
      resolve(ended);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > DRAIN_BYTES) done(false);
    };
    const onEnd = (): void => done(true);
    const onFail = (): void => done(req.complete);
    const timer = setTimeout(() => done(false), DRAIN_MS);
    req.on('data', onData).once('end', onEnd).once('error', onFail).once('close', onFail);
    req.resume();
  });
}

/**
 * Reads a JSON body of at most `maxBytes`; 413 as soon as more has arrived (the stream is left open and paused, so
 * the answer can still reach the client), 400 (JSON-RPC -32700) when it is not JSON.
 */
export function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (): void => void req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      stop();
      req.pause();
      reject(tooLarge(maxBytes));
    };
    const onEnd = (): void => {
      stop();
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'Parse error: the body is not JSON.', {}, { code: -32700, id: null }));
      }
    };
    const onError = (error: Error): void => {
      stop();
      reject(error);
    };
    // the client went away before the end of its body: nobody to answer
    const onClose = (): void => onError(new Error('the request was aborted before its body ended'));
    req.on('data', onData).once('end', onEnd).once('error', onError).once('close', onClose);
  });
}
