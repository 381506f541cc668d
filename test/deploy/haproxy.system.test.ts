import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// deploy/haproxy.cfg is the file production installs as /etc/haproxy/haproxy.cfg and the README's
// chain-pg walk-through runs unchanged (test/e2e/readme-walkthrough.system.test.ts). HAProxy comes from
// Debian's package (.ci/run installs it).
const HAPROXY = '/usr/sbin/haproxy';
const cfg = readFileSync('deploy/haproxy.cfg', 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'posd-haproxy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(file: string) {
  return spawnSync(HAPROXY, ['-c', '-f', file], { encoding: 'utf8' });
}

describe('deploy/haproxy.cfg', () => {
  it('is accepted by haproxy -c', () => {
    const r = check('deploy/haproxy.cfg');
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain('Configuration file is valid');
  });

  it('is refused by haproxy -c once broken (the check can fail)', () => {
    const broken = join(dir, 'broken.cfg');
    writeFileSync(broken, cfg.replace('use_backend posd_fronts if sync_path', 'use_backend posd_nowhere if sync_path'));
    const r = check(broken);
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/posd_nowhere/);
  });

  it('sends /sync/* to the health-checked fronts and the rest to the leading core of two, on the walk-through ports', () => {
    expect(cfg).toMatch(/\n\s+bind 127\.0\.0\.1:8080\n/);
    expect(cfg).toMatch(/acl sync_path path_beg \/sync\/\n\s+use_backend posd_fronts if sync_path\n\s+default_backend posd_core\n/);
    expect(cfg).toMatch(/backend posd_fronts\n[\s\S]*option httpchk GET \/healthz[\s\S]*server front1 127\.0\.0\.1:4301\n\s+server front2 127\.0\.0\.1:4302\n/);
    // Two cores, each asked whether it leads: a standby's 503 at /readyz takes it out.
    expect(cfg).toMatch(
      /backend posd_core\n[\s\S]*option httpchk GET \/readyz\n\s+http-check expect status 200\n[\s\S]*server core1 127\.0\.0\.1:4300\n\s+server core2 127\.0\.0\.1:4303/,
    );
    // No fixed maxconn (it refuses to start under a file limit below about twice its value): derived
    // from the limit, capped by fd-hard-limit.
    expect(cfg).not.toMatch(/^\s*maxconn\b/m);
    expect(cfg).toMatch(/^\s*fd-hard-limit 50000$/m);
  });
});
