import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { certificateRefusal, isCertificateError, normaliseFingerprint, pinnedTls, pinOfPem } from '../../src/system/tls/central-pin.js';

// What the store's link to its central trusts (docs/security.md, "The central link"): the pinned
// certificate alone, whether the central's CA or its server certificate.
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer({ config: { tls: { mode: 'on' } } }), startTestServer({ config: { tls: { mode: 'on' } } })]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

async function status(url: string, pem: string): Promise<number> {
  const agent = new Agent({ connect: pinnedTls(pinOfPem(pem)) });
  try {
    return (await request(`${url}/healthz`, { dispatcher: agent })).statusCode;
  } finally {
    await agent.close();
  }
}

describe('a pinned central', () => {
  it('is reached pinning its CA or its server certificate itself', async () => {
    const ca = readFileSync(join(a.dataDir, 'tls', 'ca.pem'), 'utf8');
    const leaf = readFileSync(join(a.dataDir, 'tls', 'server.pem'), 'utf8'); // the chain's first certificate is the server's
    expect(await status(a.url, ca)).toBe(200);
    expect(await status(a.url, leaf)).toBe(200);
  });

  it("is refused pinning another box's CA, in words that name the pin", async () => {
    const other = readFileSync(join(b.dataDir, 'tls', 'ca.pem'), 'utf8');
    const err = await status(a.url, other).catch((e: unknown) => e);
    expect(isCertificateError(err)).toBe(true);
    expect(certificateRefusal(err, pinOfPem(other))).toContain(`not the pinned one (SHA-256 ${pinOfPem(other).fingerprint})`);
  });

  it('reads a fingerprint as posd tls ca prints it, bare, lower case or prefixed', () => {
    const fp = pinOfPem(readFileSync(join(a.dataDir, 'tls', 'ca.pem'), 'utf8')).fingerprint;
    expect(normaliseFingerprint(fp)).toBe(fp);
    expect(normaliseFingerprint(fp.replace(/:/g, '').toLowerCase())).toBe(fp);
    expect(normaliseFingerprint(`sha256:${fp}`)).toBe(fp);
    expect(normaliseFingerprint('AB:CD')).toBeUndefined();
  });
});
