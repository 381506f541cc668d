/** Keeps docs/terminal-protocol.md and the code's catalogue equal. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HANDSHAKE_ERROR_CODES, serverMessageSchemas, terminalMessageSchemas } from '../../devices/index.js';

const doc = readFileSync(new URL('../../docs/terminal-protocol.md', import.meta.url), 'utf8');

describe('docs/terminal-protocol.md', () => {
  it('has a section for exactly the message types the code knows', () => {
    const documented = [...doc.matchAll(/^### `([a-z_]+)`$/gm)].map((m) => m[1]).sort();
    const known = [...new Set([...Object.keys(terminalMessageSchemas), ...Object.keys(serverMessageSchemas)])].sort();
    expect(documented).toEqual(known);
  });

  it('names every handshake error code', () => {
    for (const code of HANDSHAKE_ERROR_CODES) expect(doc).toContain(`\`${code}\``);
  });
});
