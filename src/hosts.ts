// The loopback rule, in one place: which bind addresses and Host names mean "this machine only".
import { isIPv4 } from 'node:net';

/** Host names (as a `Host` header or an `Origin` carries them, without the port) that mean this machine. */
export const LOOPBACK_HOSTNAMES = ['localhost', '127.0.0.1', '[::1]'];

/** Whether binding `host` keeps a server on this machine: `localhost`, `::1`, or any 127.x.y.z (also IPv4-mapped). */
export function isLoopbackAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIPv4(v4) && v4.startsWith('127.');
}

/**
 * Why a server must not bind `host` as asked, or undefined when it may: an address beyond this machine needs a token
 * (`--token` or `--auth`), whichever server it is (`--http` or `ui`). One rule, one message.
 */
export function exposureError(host: string, guarded: boolean): string | undefined {
  if (guarded || isLoopbackAddress(host)) return undefined;
  return `--host ${host} reaches beyond this machine: give --token or --auth so that only your clients can use the server (or bind 127.0.0.1).`;
}
