// Test certificates: a throwaway CA and a server certificate for 127.0.0.1 signed by it (TLS tests of Redis, Postgres).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A throwaway CA and a certificate for 127.0.0.1 signed by it, made with the openssl command. */
export function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const file = (name: string): string => join(dir, name);
  const run = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=bb-test-ca',
  );
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(file('ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  run(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.crt'),
    '-days',
    '2',
    '-extfile',
    file('ext.cnf'),
  );
  return { ca: file('ca.crt'), cert: file('server.crt'), key: file('server.key') };
}
