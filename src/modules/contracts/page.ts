import type { ContractRow } from './store.js';
import type { TemplateFieldT } from './schema.js';
import type { CodeChannel } from './service.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const LABEL: Record<CodeChannel, string> = { email: 'correo electrónico', messaging: 'mensaje', sandbox: 'sandbox' };
const INPUT: Record<TemplateFieldT['kind'], string> = { text: 'text', date: 'date', document: 'text', contact: 'tel', checkbox: 'checkbox' };

export interface PageState {
  row: ContractRow;
  fields: TemplateFieldT[];
  channels: CodeChannel[];
  notice?: string;
  error?: string;
  sandboxCode?: string;
}

/**
 * The signing page: plain HTML forms, no script (the page's CSP forbids any), so it works in every
 * browser a customer may have and nothing in a merchant's template can run.
 */
export function signingPage(s: PageState): string {
  const { row } = s;
  const open = row.status === 'sent' || row.status === 'viewed';
  const base = `/sign/${esc(row.signing_token)}`;
  const parts: string[] = [];
  parts.push(`<h1 id="title">${esc(row.title)}</h1>`);
  parts.push(`<p id="status" data-status="${row.status}">Estado: ${esc(row.status)}</p>`);
  if (s.error) parts.push(`<p id="error" role="alert" class="error">${esc(s.error)}</p>`);
  if (s.notice) parts.push(`<p id="notice">${esc(s.notice)}</p>`);
  if (s.sandboxCode) parts.push(`<p id="sandbox-code">Código (sandbox): <strong>${esc(s.sandboxCode)}</strong></p>`);
  // The merchant's template text, filled with escaped values: exactly the text that is signed.
  parts.push(`<article id="contract-body">${row.body}</article>`);
  if (open) {
    parts.push(`<form id="code-form" method="post" action="${base}/code"><p>Para firmar, pida un código de un solo uso:</p>`);
    for (const c of s.channels) parts.push(`<button type="submit" name="channel" value="${c}" id="send-${c}">Enviar código por ${LABEL[c]}</button> `);
    parts.push('</form>');
    parts.push(`<form id="sign-form" method="post" action="${base}/complete">`);
    parts.push('<label>Código <input name="code" id="code" inputmode="numeric" autocomplete="one-time-code" required></label>');
    for (const f of s.fields) {
      const id = `field-${esc(f.key)}`;
      parts.push(
        `<label>${esc(f.label)}${f.required ? ' *' : ''} <input type="${INPUT[f.kind]}" name="field_${esc(f.key)}" id="${id}"${f.kind === 'checkbox' ? '' : ''}></label>`,
      );
    }
    parts.push('<label>Motivo (si rechaza) <input name="decline_reason" id="decline-reason"></label>');
    parts.push('<button type="submit" name="action" value="sign" id="sign">Firmar</button> ');
    parts.push('<button type="submit" name="action" value="decline" id="decline" formnovalidate>Rechazar</button>');
    parts.push('</form>');
  } else if (row.status === 'signed') {
    parts.push(`<p id="signed">Firmado el ${esc(row.signed_at ?? '')}. SHA-256: <code id="sha">${esc(row.body_sha256 ?? '')}</code></p>`);
    if (row.pdf_file) parts.push(`<p><a id="pdf" href="${base}/pdf">Descargar PDF firmado</a></p>`);
  }
  return `<!doctype html><html lang="es"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(row.title)}</title><style>body{font-family:system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem}
label{display:block;margin:.5rem 0}.error{color:#b00}article{border:1px solid #ccc;padding:1rem;margin:1rem 0}</style></head>
<body>${parts.join('\n')}</body></html>`;
}

export function notFoundPage(): string {
  return '<!doctype html><html lang="es"><head><meta charset="utf-8"><title>Enlace no válido</title></head><body><h1>Este enlace no es válido.</h1></body></html>';
}
