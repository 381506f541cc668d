/**
 * Local review of verification documents. posd has no identity bureau to call, so it checks what
 * can be checked offline and is decisive: the Guatemalan CUI (DPI number) check digit and its
 * department and municipality, the NIT check digit, dates, and that each file is an https URL.
 */

export type DocumentType = 'identity_document' | 'tax_registration' | 'proof_of_address';
export const REQUIRED_DOCUMENTS: readonly DocumentType[] = ['identity_document', 'tax_registration', 'proof_of_address'];

export interface IdentityDocument {
  number: string;
  expires_on: string;
  file_url: string;
}
export interface TaxRegistration {
  nit: string;
  legal_name: string;
  file_url: string;
}
export interface ProofOfAddress {
  address: string;
  issued_on: string;
  file_url: string;
}
export interface Documents {
  identity_document?: IdentityDocument;
  tax_registration?: TaxRegistration;
  proof_of_address?: ProofOfAddress;
}

/** Municipalities per department (RENAP numbering, departments 01-22). */
const MUNICIPALITIES = [17, 8, 16, 16, 14, 14, 19, 8, 24, 21, 9, 30, 33, 21, 8, 17, 14, 5, 11, 11, 7, 17];

/** CUI: 8 digits, a check digit (sum of digit i times i+2, mod 11), department and municipality. */
export function validCui(raw: string): boolean {
  const cui = raw.replace(/[\s-]/g, '');
  if (!/^\d{13}$/.test(cui)) return false;
  const digits = cui.slice(0, 8).split('').map(Number);
  const check = Number(cui[8]);
  const dept = Number(cui.slice(9, 11));
  const muni = Number(cui.slice(11, 13));
  if (dept < 1 || dept > 22 || muni < 1 || muni > MUNICIPALITIES[dept - 1]) return false;
  const sum = digits.reduce((s, d, i) => s + d * (i + 2), 0);
  return sum % 11 === check;
}

/** NIT: digits then a check digit (0-9 or K): weights from the length down to 2, check = (11 - sum mod 11) mod 11. */
export function validNit(raw: string): boolean {
  const nit = raw.replace(/[\s-]/g, '').toUpperCase();
  if (!/^\d{1,12}[0-9K]$/.test(nit)) return false;
  const body = nit.slice(0, -1);
  const sum = body.split('').reduce((s, d, i) => s + Number(d) * (body.length + 1 - i), 0);
  const expected = (11 - (sum % 11)) % 11;
  return nit.slice(-1) === (expected === 10 ? 'K' : String(expected));
}

function httpsUrl(u: string): boolean {
  try {
    return new URL(u).protocol === 'https:';
  } catch {
    return false;
  }
}

const DAY = 86_400_000;

/** Messages per rejected document; an empty object means every submitted document passes. */
export function reviewDocuments(docs: Documents, nowMs: number): Partial<Record<DocumentType, string[]>> {
  const errors: Partial<Record<DocumentType, string[]>> = {};
  const add = (t: DocumentType, m: string) => (errors[t] ??= []).push(m);
  const today = new Date(nowMs).toISOString().slice(0, 10);
  for (const [type, doc] of Object.entries(docs) as Array<[DocumentType, { file_url: string }]>) {
    if (!doc) continue;
    if (!httpsUrl(doc.file_url)) add(type, 'file_url must be an https URL of the scanned document');
  }
  if (docs.identity_document) {
    const d = docs.identity_document;
    if (!validCui(d.number)) add('identity_document', 'number is not a valid CUI (DPI)');
    if (!(d.expires_on > today)) add('identity_document', 'the document has expired');
  }
  if (docs.tax_registration) {
    const d = docs.tax_registration;
    if (!validNit(d.nit)) add('tax_registration', 'nit has a wrong check digit');
    if (!d.legal_name.trim()) add('tax_registration', 'legal_name is empty');
  }
  if (docs.proof_of_address) {
    const issued = Date.parse(`${docs.proof_of_address.issued_on}T00:00:00Z`);
    if (!(issued <= nowMs)) add('proof_of_address', 'issued_on is in the future');
    else if (nowMs - issued > 90 * DAY) add('proof_of_address', 'the document is older than 90 days');
  }
  return errors;
}
