import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';

const dir = mkdtempSync(join(tmpdir(), 'posd-tls-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('posd init and posd tls ca', () => {
  it('make the box CA at init and print the same file and fingerprint after', async () => {
    const data = join(dir, 'data');
    const init = await runPosd(['init', '--data', data, '--json']);
    expect(init.code).toBe(0);
    const made = JSON.parse(init.stdout).tls_ca as { file: string; fingerprint: string };
    expect(made.file).toBe(join(data, 'tls', 'ca.pem'));
    expect(made.fingerprint).toBe(new X509Certificate(readFileSync(made.file)).fingerprint256);
    expect(readFileSync(join(data, 'tls', 'ca-key.sealed'), 'utf8')).not.toContain('PRIVATE KEY');

    const shown = await runPosd(['tls', 'ca', '--data', data]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(made.file);
    expect(shown.stdout).toContain(`SHA-256 ${made.fingerprint}`);
    expect((await runPosd(['tls', 'ca', '--data', data, '--pem'])).stdout).toBe(readFileSync(made.file, 'utf8'));

    const none = await runPosd(['tls', 'ca', '--data', join(dir, 'nothing')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('posd init');
  });
});
