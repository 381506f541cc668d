import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A test CA and a terminal certificate named as Adyen names its terminals (POIID first). */
export function makeNexoCertificates(into: string, poiid: string): { ca: string; key: string; cert: string } {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: into, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=posd test terminal CA');
  ssl('req', ...ec, '-keyout', 'terminal.key', '-out', 'terminal.csr', '-subj', `/CN=${poiid.toLowerCase()}.test.terminal.adyen.com`);
  ssl('x509', '-req', '-in', 'terminal.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'terminal.pem', '-days', '1');
  return { ca: join(into, 'ca.pem'), key: readFileSync(join(into, 'terminal.key'), 'utf8'), cert: readFileSync(join(into, 'terminal.pem'), 'utf8') };
}
