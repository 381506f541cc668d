import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** The signed text as plain text: block tags become line breaks, other tags go, entities are decoded. */
export function htmlToText(html: string): string {
  return html
    .replace(/<\s*br\s*\/?>/gi, '\n')
    .replace(/<\/\s*(p|div|h[1-6]|li|tr)\s*>/gi, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export interface SignedPdfInput {
  title: string;
  body: string;
  fields: Array<{ label: string; value: string }>;
  signer: string;
  signedAt: string;
  channel: string;
  sha256: string;
}

/**
 * Renders the signed contract with pdfkit into `dir/<name>`: written under a temporary name and
 * renamed, so a download never sees half a file. Content streams are left uncompressed so the signed
 * text can be read back from the file (and checked by tests) without a PDF library.
 */
export async function renderSignedPdf(dir: string, name: string, input: SignedPdfInput): Promise<void> {
  // Loaded by the first signed contract, not at start: pdfkit (and its fonts) cost most of a second.
  const { default: PDFDocument } = await import('pdfkit');
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${name}.tmp`);
  try {
    await new Promise<void>((resolve, reject) => {
      const doc = new PDFDocument({ size: 'LETTER', margin: 56, compress: false, info: { Title: input.title } });
      const out = createWriteStream(tmp);
      out.on('finish', resolve);
      out.on('error', reject);
      doc.on('error', reject);
      doc.pipe(out);
      doc.font('Helvetica-Bold').fontSize(16).text(input.title);
      doc.moveDown();
      doc.font('Helvetica').fontSize(11).text(htmlToText(input.body));
      if (input.fields.length) {
        doc.moveDown();
        for (const f of input.fields) doc.text(`${f.label}: ${f.value}`);
      }
      doc.moveDown();
      doc.font('Helvetica-Oblique').fontSize(9);
      doc.text(`Firmado por ${input.signer} el ${input.signedAt}, identidad confirmada por ${input.channel}.`);
      doc.text(`SHA-256 del texto firmado: ${input.sha256}`);
      doc.end();
    });
    await rename(tmp, join(dir, name));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
