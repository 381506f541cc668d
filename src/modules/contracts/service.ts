import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { newId, randomToken } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { UNIFIED_API_VERSION } from '../../events/formats.js';
import type { Account } from '../../accounts/service.js';
import { createCheckout, checkoutUrl } from '../checkouts/service.js';
import { findOrCreateCustomer, getCustomer } from '../customers/service.js';
import { hasBooking } from '../bookings/service.js';
import { addInterval } from '../subscriptions/service.js';
import { initialState, nextState } from '../../lifecycle.js';
import { contractMachine, type ContractEvent } from './machine.js';
import { renderSignedPdf } from './pdf.js';
import { ContractsStore, type ContractRow, type TemplateRow } from './store.js';
import type { Contract, CreateContractInput, CreateTemplateInput, TemplateFieldT } from './schema.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** What a contract has not yet at the moment it is sent: filled as it is viewed, coded, signed or declined. */
export const UNSET_AT_SEND = {
  field_values: '{}',
  verified_channel: null,
  body_sha256: null,
  pdf_file: null,
  code_hash: null,
  code_channel: null,
  code_expires_at: null,
  code_attempts: 0,
  viewed_at: null,
  signed_at: null,
  valid_until: null,
  declined_at: null,
  decline_reason: null,
  reminder_sent_at: null,
} as const satisfies Partial<ContractRow>;

export const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const codeHash = (token: string, code: string) => createHash('sha256').update(`${token}:${code}`).digest();

export type CodeChannel = 'email' | 'messaging' | 'sandbox';

export function templateView(t: TemplateRow) {
  return {
    id: t.id,
    name: t.name,
    body: t.body,
    signature_required_before: t.signature_required_before,
    signature_valid_for_months: t.signature_valid_for_months,
    fields: JSON.parse(t.fields) as TemplateFieldT[],
    service_ids: JSON.parse(t.service_ids) as string[],
    created_at: t.created_at,
  };
}

export function contractView(ctx: AppContext, r: ContractRow): Contract {
  return {
    id: r.id,
    account_id: r.account_id,
    template_id: r.template_id,
    customer: JSON.parse(r.customer),
    booking_id: r.booking_id,
    checkout_id: r.checkout_id,
    checkout_url: r.checkout_id ? checkoutUrl(ctx, r.checkout_id) : null,
    title: r.title,
    status: r.status,
    sent_via: r.sent_via,
    signing_url: r.signing_url,
    field_values: JSON.parse(r.field_values),
    verified_channel: r.verified_channel,
    body_sha256: r.body_sha256,
    pdf_available: r.pdf_file !== null,
    viewed_at: r.viewed_at,
    signed_at: r.signed_at,
    valid_until: r.valid_until,
    declined_at: r.declined_at,
    reminder_sent_at: r.reminder_sent_at,
    decline_reason: r.decline_reason,
    created_at: r.created_at,
  };
}

/** `contract.send`: the contract as the API shows it (the emitter and the test-send, events.ts). */
export function contractSendPayload(ctx: AppContext, r: ContractRow) {
  return { id: r.id, event_type: 'contract.send', api_version: UNIFIED_API_VERSION, created_at: r.created_at, contract: contractView(ctx, r) };
}

/** The signing secrets never leave the box that sends the codes. */
type SyncedContractRow = Omit<ContractRow, 'signing_token' | 'code_hash' | 'code_channel' | 'code_expires_at' | 'code_attempts' | 'pdf_file'>;

/**
 * The `contract` record of a creation or a state change: the contract as the API answers it, plus
 * the row (the filled text, its times) and the template it was filled from, which a central that
 * never saw them (made at the store) needs to hold the contract.
 */
export type ContractRecord = Contract & { row: SyncedContractRow; template: TemplateRow };

export function contractRecord(ctx: AppContext, row: ContractRow, template: TemplateRow): ContractRecord {
  const { signing_token: _t, code_hash: _h, code_channel: _c, code_expires_at: _e, code_attempts: _a, pdf_file: _p, ...synced } = row;
  return { ...contractView(ctx, row), row: synced, template };
}

export class SigningError extends Error {}

export class ContractsService {
  readonly store: ContractsStore;

  constructor(private readonly ctx: AppContext) {
    this.store = new ContractsStore(ctx.db);
  }

  private now(): string {
    return isoTime(this.ctx.clock.now());
  }

  pdfDir(): string {
    return join(this.ctx.config.data_dir, 'contracts');
  }

  createTemplate(account: Account, input: CreateTemplateInput): TemplateRow {
    const keys = (input.fields ?? []).map((f) => f.key);
    const dup = keys.findIndex((k, i) => keys.indexOf(k) !== i);
    if (dup >= 0) throw invalid({ [`fields.${dup}.key`]: 'is used twice' });
    const row: TemplateRow = {
      id: newId('ctpl'),
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      name: input.name,
      body: input.body,
      signature_required_before: input.signature_required_before ?? 'confirmation',
      signature_valid_for_months: input.signature_valid_for_months ?? null,
      fields: JSON.stringify(input.fields ?? []),
      service_ids: JSON.stringify(input.service_ids ?? []),
      created_at: this.now(),
    };
    tx(this.ctx.db, () => this.store.insertTemplate(row));
    return row;
  }

  template(accountIds: string[], liveMode: boolean, id: string): TemplateRow {
    const t = this.store.template(id);
    if (!t || !accountIds.includes(t.account_id) || (t.live_mode === 1) !== liveMode) throw notFound('contract template', id);
    return t;
  }

  find(accountIds: string[], liveMode: boolean, id: string): ContractRow {
    const c = this.store.get(id);
    if (!c || !accountIds.includes(c.account_id) || (c.live_mode === 1) !== liveMode) throw notFound('contract', id);
    return c;
  }

  /** A signed contract of this template whose validity still covers the customer (spec 2.4 `signature_valid_for_months`). */
  coveringSignature(account: Account, templateId: string, customerId: string): ContractRow | undefined {
    return this.store.covering(account.id, customerId, templateId, this.now());
  }

  /** Spec 4.8: fills the template, records the contract `sent`, emits `contract.send`. `baseUrl` makes `signing_url`. */
  create(account: Account, input: CreateContractInput, baseUrl: string): ContractRow {
    const t = this.template([account.id], account.live_mode, input.template_id);
    if (/\{servicio\}/.test(t.body) && !input.service_name) throw new ApiError('service_name_required');
    // Like every id in a body, resolved in the caller's account and environment: another's booking
    // is answered exactly like one that does not exist (issue 17, hole 9).
    if (input.booking_id && !hasBooking(this.ctx, account, input.booking_id)) {
      throw invalid({ booking_id: `no booking with id ${input.booking_id}` });
    }
    return tx(this.ctx.db, () => {
      let customer;
      if (input.customer_id) {
        customer = getCustomer(this.ctx, account, input.customer_id);
        if (!customer) throw new ApiError('invalid_customer', { message: `No customer with id ${input.customer_id}.` });
      } else if (input.customer?.phone && input.customer.name) {
        customer = findOrCreateCustomer(this.ctx, account, { name: input.customer.name, phone: input.customer.phone, email: input.customer.email ?? null });
      } else {
        throw new ApiError('invalid_customer');
      }
      const name = customer.full_name ?? input.customer?.name ?? '';
      const body = t.body
        .replaceAll('{nombre}', escapeHtml(name))
        .replaceAll('{comercio}', escapeHtml(account.name))
        .replaceAll('{servicio}', escapeHtml(input.service_name ?? ''));
      const id = newId('ctr');
      const token = randomToken(32);
      const at = this.now();
      let checkoutId: string | null = null;
      if (input.charge_amount_in_cents) {
        // Paid after signing: the payments service refuses it while the contract is unsigned.
        checkoutId = createCheckout(this.ctx, account, {
          items: [{ name: input.service_name ?? t.name, amount_in_cents: input.charge_amount_in_cents, quantity: 1, tax_category: 'service' }],
          currency: account.default_currency,
          customer_id: customer.id,
          metadata: { contract_id: id },
        }).id;
      }
      const email = customer.email ?? input.customer?.email ?? null;
      const phone = customer.phone ?? input.customer?.phone ?? null;
      const row: ContractRow = {
        id,
        account_id: account.id,
        live_mode: account.live_mode ? 1 : 0,
        template_id: t.id,
        customer_id: customer.id,
        customer: JSON.stringify({ id: customer.id, name: name || null, email, phone }),
        booking_id: input.booking_id ?? null,
        checkout_id: checkoutId,
        title: t.name,
        body,
        status: initialState(contractMachine),
        sent_via: input.sent_via ?? (phone ? 'messaging' : email ? 'email' : 'link'),
        signing_token: token,
        signing_url: `${baseUrl}/sign/${token}`,
        ...UNSET_AT_SEND,
        expires_at: isoTime(this.ctx.clock.now() + this.ctx.config.contracts.expire_after_days * 86_400_000),
        created_at: at,
        updated_at: at,
      };
      this.store.insert(row);
      const scope = { accountId: account.id, liveMode: account.live_mode };
      this.ctx.outbox.emit({ ...scope, type: 'contract.send', objectId: id, payload: contractSendPayload(this.ctx, row) });
      appendSyncRecord(this.ctx.db, { kind: 'contract', ...scope, createdAt: at, payload: contractRecord(this.ctx, row, t) });
      return row;
    });
  }

  private move(row: ContractRow, event: ContractEvent, patch: Partial<ContractRow>): ContractRow {
    const to = nextState(contractMachine, row.status, event);
    if (!to) throw new SigningError(`Este contrato ya no admite cambios (${row.status}).`);
    const next = { ...row, ...patch, status: to, updated_at: this.now() };
    this.store.save(next);
    if (to !== row.status && to !== 'viewed') {
      appendSyncRecord(this.ctx.db, {
        kind: 'contract',
        accountId: row.account_id,
        liveMode: row.live_mode === 1,
        createdAt: next.updated_at,
        payload: contractRecord(this.ctx, next, this.store.template(next.template_id)!),
      });
    }
    return next;
  }

  /** The signing page was opened: `sent` → `viewed`, once. */
  viewed(token: string): ContractRow | undefined {
    return tx(this.ctx.db, () => {
      const row = this.store.byToken(token);
      if (row?.status !== 'sent') return row;
      return this.move(row, { type: 'VIEW' }, { viewed_at: this.now() });
    });
  }

  channels(row: ContractRow): CodeChannel[] {
    const c = JSON.parse(row.customer) as { email: string | null; phone: string | null };
    const out: CodeChannel[] = [];
    if (c.email && this.ctx.config.contracts.smtp.host) out.push('email');
    if (c.phone && this.ctx.config.contracts.messaging.url) out.push('messaging');
    if (row.live_mode === 0) out.push('sandbox');
    return out;
  }

  /** A new one-time code (the previous one stops working). Returns the code for the caller to deliver. */
  newCode(token: string, channel: CodeChannel): { row: ContractRow; code: string } {
    return tx(this.ctx.db, () => {
      const row = this.store.byToken(token);
      if (!row) throw new SigningError('Este enlace de firma no es válido.');
      if (row.status !== 'sent' && row.status !== 'viewed') throw new SigningError(`Este contrato ya no admite cambios (${row.status}).`);
      if (!this.channels(row).includes(channel)) throw new SigningError('Ese medio no está disponible para este contrato.');
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      const next = {
        ...row,
        code_hash: codeHash(token, code).toString('hex'),
        code_channel: channel,
        code_expires_at: isoTime(this.ctx.clock.now() + this.ctx.config.contracts.code_ttl_minutes * 60_000),
        code_attempts: 0,
        updated_at: this.now(),
      };
      this.store.save(next);
      return { row: next, code };
    });
  }

  /**
   * Signs or declines with the code. A wrong, expired, superseded or already used code is refused
   * (and counted: after `code_max_attempts` a new code must be requested). The code is consumed on
   * success, so it can never be replayed.
   */
  complete(token: string, code: string, action: { sign: Record<string, string | boolean> } | { decline: string | null }): ContractRow {
    const result = tx(this.ctx.db, () => {
      const row = this.store.byToken(token);
      if (!row) throw new SigningError('Este enlace de firma no es válido.');
      if (row.status !== 'sent' && row.status !== 'viewed') throw new SigningError(`Este contrato ya no admite cambios (${row.status}).`);
      const expired = !row.code_expires_at || row.code_expires_at <= this.now();
      const exhausted = row.code_attempts >= this.ctx.config.contracts.code_max_attempts;
      const given = codeHash(token, code.trim());
      const ok = !!row.code_hash && !expired && !exhausted && timingSafeEqual(Buffer.from(row.code_hash, 'hex'), given);
      if (!ok) {
        this.store.save({ ...row, code_attempts: row.code_attempts + 1, updated_at: this.now() });
        return {
          error: exhausted
            ? 'Demasiados códigos incorrectos: pida uno nuevo.'
            : expired
              ? 'El código venció o fue reemplazado: pida uno nuevo.'
              : 'El código no es correcto.',
        };
      }
      const at = this.now();
      const consumed = { code_hash: null, code_expires_at: null, code_attempts: 0, verified_channel: row.code_channel as ContractRow['verified_channel'] };
      if ('decline' in action) {
        return { row: this.move(row, { type: 'DECLINE' }, { ...consumed, declined_at: at, decline_reason: action.decline }) };
      }
      const t = this.store.template(row.template_id)!;
      const fields = JSON.parse(t.fields) as TemplateFieldT[];
      const values: Record<string, string | boolean> = {};
      const missing: string[] = [];
      for (const f of fields) {
        const v = action.sign[f.key];
        if (f.kind === 'checkbox') values[f.key] = v === true || v === 'on' || v === 'true';
        else if (typeof v === 'string' && v.trim()) values[f.key] = v.trim();
        if (f.required && (f.kind === 'checkbox' ? values[f.key] !== true : values[f.key] === undefined)) missing.push(f.label);
      }
      // The code stays valid when only fields are missing: the customer fixes them and signs.
      if (missing.length) return { error: `Complete: ${missing.join(', ')}.` };
      return {
        row: this.move(
          row,
          { type: 'SIGN' },
          {
            ...consumed,
            field_values: JSON.stringify(values),
            signed_at: at,
            body_sha256: sha256(row.body),
            valid_until: t.signature_valid_for_months ? addInterval(at, 'month', t.signature_valid_for_months) : null,
          },
        ),
      };
    });
    if ('error' in result) throw new SigningError(result.error);
    return result.row;
  }

  /** Renders the signed PDF (after the signature committed) and records it: `pdf_available` turns true. */
  async renderPdf(row: ContractRow): Promise<void> {
    if (row.status !== 'signed' || row.pdf_file) return;
    const t = this.store.template(row.template_id)!;
    const fields = JSON.parse(t.fields) as TemplateFieldT[];
    const values = JSON.parse(row.field_values) as Record<string, string | boolean>;
    const customer = JSON.parse(row.customer) as { name: string | null };
    const name = `${row.id}.pdf`;
    await renderSignedPdf(this.pdfDir(), name, {
      title: row.title,
      body: row.body,
      fields: fields.map((f) => ({ label: f.label, value: f.kind === 'checkbox' ? (values[f.key] ? 'Sí' : 'No') : String(values[f.key] ?? '') })),
      signer: customer.name ?? row.customer_id,
      signedAt: row.signed_at!,
      channel: row.verified_channel ?? 'link',
      sha256: row.body_sha256!,
    });
    tx(this.ctx.db, () => {
      const cur = this.store.get(row.id)!;
      if (!cur.pdf_file) this.store.save({ ...cur, pdf_file: name, updated_at: this.now() });
    });
  }
}
