import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RecoveryKeyError,
  WrongRecoveryKeyError,
  makeRecoveryPair,
  newRecoveryPair,
  openWithRecoveryKey,
  parseRecoveryKey,
  publicOfRecoveryKey,
  readRecoveryPublic,
  sealToRecoveryKey,
} from '../../src/system/recovery-key.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the recovery key', () => {
  it('opens what was sealed to its public half, and nothing else does', () => {
    const pair = makeRecoveryPair();
    expect(pair.recoveryKey).toMatch(/^POSD-RK1(-[0-9A-HJKMNP-TV-Z]{1,5}){11}$/);
    const sealed = sealToRecoveryKey('{"webhook_secrets_key":"k"}', pair.publicRaw);
    expect(sealed).not.toContain('webhook_secrets_key');
    expect(openWithRecoveryKey(sealed, pair.recoveryKey)).toBe('{"webhook_secrets_key":"k"}');
    // Written down by hand: lower case, spaces, O for 0 and l for 1 read back the same.
    const sloppy = pair.recoveryKey.toLowerCase().replace(/-/g, ' ').replace(/0/g, 'o').replace(/1/g, 'l');
    expect(openWithRecoveryKey(sealed, sloppy)).toBe('{"webhook_secrets_key":"k"}');
    expect(() => openWithRecoveryKey(sealed, makeRecoveryPair().recoveryKey)).toThrow(WrongRecoveryKeyError);
    // Each seal uses a key of its own: the same text seals differently.
    expect(sealToRecoveryKey('x', pair.publicRaw)).not.toBe(sealToRecoveryKey('x', pair.publicRaw));
  });

  it('names a mistyped or short key instead of trying it', () => {
    const pair = makeRecoveryPair();
    const groups = pair.recoveryKey.split('-');
    const last = groups[5];
    groups[5] = (last[0] === 'A' ? 'B' : 'A') + last.slice(1);
    expect(() => parseRecoveryKey(groups.join('-'))).toThrow(/does not check out/);
    expect(() => parseRecoveryKey(pair.recoveryKey.slice(0, -6))).toThrow(/too short/);
    expect(() => parseRecoveryKey('hello')).toThrow(RecoveryKeyError);
    expect(publicOfRecoveryKey(pair.recoveryKey).equals(pair.publicRaw)).toBe(true);
  });

  it('keeps only the public half in the data folder', () => {
    const d = mkdtempSync(join(tmpdir(), 'posd-rk-'));
    dirs.push(d);
    expect(readRecoveryPublic({ data_dir: d })).toBeUndefined();
    const pair = newRecoveryPair({ data_dir: d });
    const kept = readRecoveryPublic({ data_dir: d })!;
    expect(kept.id).toBe(pair.id);
    expect(kept.raw.equals(pair.publicRaw)).toBe(true);
    expect(openWithRecoveryKey(sealToRecoveryKey('s', kept.raw), pair.recoveryKey)).toBe('s');
  });
});
