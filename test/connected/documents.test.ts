import { describe, expect, it } from 'vitest';
import { reviewDocuments, validCui, validNit } from '../../src/modules/connected/documents.js';

describe('document checks', () => {
  it('CUI: check digit, department and municipality', () => {
    expect(validCui('1234567890101')).toBe(true);
    expect(validCui('1234 56789 0101')).toBe(true);
    expect(validCui('1234567800101')).toBe(false); // wrong check digit
    expect(validCui('1234567892301')).toBe(false); // department 23
    expect(validCui('1234567891806')).toBe(false); // Izabal has 5 municipalities
    expect(validCui('1234567891805')).toBe(true);
    expect(validCui('123456789010')).toBe(false);
  });

  it('NIT: mod 11 check digit, K for ten', () => {
    expect(validNit('12345679')).toBe(true);
    expect(validNit('1234567-9')).toBe(true);
    expect(validNit('12345670')).toBe(false);
    expect(validNit('6K')).toBe(true);
    expect(validNit('6k')).toBe(true);
    expect(validNit('60')).toBe(false);
    expect(validNit('CF')).toBe(false);
  });

  it('dates and URLs', () => {
    const now = Date.parse('2026-06-01T00:00:00Z');
    const errors = reviewDocuments(
      {
        identity_document: { number: '1234567890101', expires_on: '2026-05-31', file_url: 'http://x/doc.pdf' },
        proof_of_address: { address: 'Zona 10', issued_on: '2026-01-15', file_url: 'https://x/a.pdf' },
      },
      now,
    );
    expect(errors.identity_document).toEqual(['file_url must be an https URL of the scanned document', 'the document has expired']);
    expect(errors.proof_of_address).toEqual(['the document is older than 90 days']);
  });
});
