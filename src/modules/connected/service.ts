import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { accountsOf, type AccountsService, type Account } from '../../accounts/service.js';
import { accountView } from '../../accounts/view.js';
import { REQUIRED_DOCUMENTS, reviewDocuments, type DocumentType, type Documents } from './documents.js';
import { accountConnectionPayload, taxInvoiceSettingsPayload, taxInvoicingView, verificationPayload, verificationView } from './views.js';
import { initialState, nextState } from '../../lifecycle.js';
import { taxInvoicingMachine, verificationMachine, type VerificationEvent } from './machine.js';
import { connectedStore, type ConnectedStore, type ProfileRow } from './store.js';
import type { CommissionInvoicing, ConnectedAccount, CreateConnectedInput, TaxInvoicing, TaxInvoicingInput, Verification } from './schema.js';
import { secretBoxOf } from '../../system/secret-box.js';

type StoredDocs = Partial<Record<DocumentType, { data: unknown; submitted_at: string }>>;
type Mode = 'none' | 'daily';

export class ConnectedService {
  readonly store: ConnectedStore;
  readonly accounts: AccountsService;

  constructor(private readonly ctx: AppContext) {
    this.store = connectedStore(ctx.db);
    this.accounts = accountsOf(ctx);
  }

  private now(): string {
    return isoTime(this.ctx.clock.now());
  }

  /** A direct child of the platform in the same environment, or 404 (never 403: ids stay unrevealed). */
  requireChild(platform: Account, childId: string): Account {
    const child = this.accounts.account(childId);
    if (!child || child.parent_account_id !== platform.id || child.live_mode !== platform.live_mode) throw notFound('connected account', childId);
    return child;
  }

  /** The child's profile, made on first use for children connected by other means. Joins the caller's transaction. */
  profile(child: Account): ProfileRow {
    const found = this.store.get(child.id);
    if (found) return found;
    const at = this.now();
    const row: ProfileRow = {
      account_id: child.id,
      live_mode: child.live_mode ? 1 : 0,
      parent_account_id: child.parent_account_id!,
      email: null,
      verification_status: initialState(verificationMachine),
      documents: '{}',
      document_errors: '{}',
      submitted_at: null,
      reviewed_at: null,
      verified_at: null,
      commission_override_mode: null,
      commission_enabled_at: null,
      commission_disabled_at: null,
      commission_invoiced_through: null,
      tax_invoicing_status: initialState(taxInvoicingMachine),
      tax_invoicing_public: '{}',
      tax_invoicing_credentials: '{}',
      tax_invoicing_activated_at: null,
      created_at: at,
      updated_at: at,
    };
    tx(this.ctx.db, () => this.store.insert(row));
    // A child that inherits a daily default starts its interval when posd first sees it.
    this.syncCommissionInterval(row);
    return this.store.get(child.id)!;
  }

  verification(p: ProfileRow): Verification {
    return verificationView(p);
  }

  view(child: Account, p: ProfileRow): ConnectedAccount {
    return { ...accountView(child), email: p.email ?? '', verification: this.verification(p) };
  }

  /** An event about a child, delivered to its platform; its payload from views.ts (`connected: true`, the child's `account_id`). */
  private emitToPlatform(child: Account, type: string, payload: Record<string, unknown>): void {
    this.ctx.outbox.emit({ accountId: child.parent_account_id!, liveMode: child.live_mode, type, objectId: child.id, payload });
  }

  /**
   * Spec 4.11 `POST /connected_accounts`: a new e-mail connects a new child (201); the e-mail of an
   * existing child resubmits its documents (200).
   */
  submit(platform: Account, input: CreateConnectedInput): { created: boolean; account: ConnectedAccount } {
    const email = input.email.trim().toLowerCase();
    return tx(this.ctx.db, () => {
      const existing = this.store.byEmail(platform.id, email);
      if (existing) {
        const child = this.accounts.account(existing.account_id)!;
        const p = input.documents ? this.review(child, existing, input.documents as Documents) : existing;
        return { created: false, account: this.view(this.accounts.account(child.id)!, p) };
      }
      const liveParent = platform.live_mode ? platform.id : platform.sandbox_of!;
      const made = this.accounts.createAccount({
        name: input.name ?? email.split('@')[0],
        parentId: liveParent,
        country: input.country?.toUpperCase(),
        defaultCurrency: input.default_currency,
      });
      // Both environments' children exist; each gets its profile, the acting one hears of it.
      let acting: Account | undefined;
      for (const child of [made.account, made.sandbox]) {
        const p = this.profile(child);
        this.store.save({ ...p, email, updated_at: this.now() });
        if (child.live_mode === platform.live_mode && child.parent_account_id === platform.id) acting = child;
      }
      if (!acting) throw new Error(`the new child of ${platform.id} has no account in its environment`);
      this.emitToPlatform(acting, 'account_connection.create', accountConnectionPayload(acting, this.now()));
      appendSyncRecord(this.ctx.db, {
        kind: 'connected_account',
        accountId: platform.id,
        liveMode: platform.live_mode,
        createdAt: this.now(),
        payload: {
          live_account_id: made.account.id,
          sandbox_id: made.sandbox.id,
          parent_account_id: liveParent,
          email,
          name: made.account.name,
          country: made.account.country,
          default_currency: made.account.default_currency,
          event_format: made.account.event_format,
          created_at: made.account.created_at,
        },
      });
      let p = this.store.get(acting.id)!;
      if (input.documents) p = this.review(acting, p, input.documents as Documents);
      return { created: true, account: this.view(this.accounts.account(acting.id)!, p) };
    });
  }

  /**
   * Replaces the documents sent, keeps the others, reviews the whole set and moves verification.
   * No documents: nothing changes. Events fire on a change of state (and a rejection with new
   * errors), never when the same state is saved again.
   */
  private review(child: Account, p: ProfileRow, incoming: Documents): ProfileRow {
    const sent = Object.entries(incoming).filter(([, v]) => v !== undefined) as Array<[DocumentType, unknown]>;
    if (sent.length === 0) return p;
    const at = this.now();
    const docs = JSON.parse(p.documents) as StoredDocs;
    for (const [type, data] of sent) docs[type] = { data, submitted_at: at };
    const merged = Object.fromEntries(Object.entries(docs).map(([t, d]) => [t, d!.data])) as Documents;
    const errors = reviewDocuments(merged, this.ctx.clock.now());
    const missing = REQUIRED_DOCUMENTS.filter((t) => !docs[t]);
    const event: VerificationEvent =
      Object.keys(errors).length > 0 ? { type: 'DOCUMENTS_REJECTED' } : missing.length > 0 ? { type: 'DOCUMENTS_MISSING' } : { type: 'DOCUMENTS_ACCEPTED' };
    const prev = p.verification_status;
    // Every review lands from any state: the machine takes each of the three outcomes everywhere.
    const status = nextState(verificationMachine, prev, event)!;
    const errorsJson = JSON.stringify(errors);
    const next: ProfileRow = {
      ...p,
      verification_status: status,
      documents: JSON.stringify(docs),
      document_errors: errorsJson,
      submitted_at: at,
      reviewed_at: at,
      verified_at: status === 'verified' ? (prev === 'verified' ? p.verified_at : at) : p.verified_at,
      updated_at: at,
    };
    this.store.save(next);
    if (status === 'rejected' && (prev !== 'rejected' || errorsJson !== p.document_errors)) {
      this.emitToPlatform(child, 'verification.rejected', verificationPayload(child, next, at));
    }
    if (status === 'verified' && prev !== 'verified') {
      // Spec 4.1: the account's tax fields come from the accepted tax registration document.
      const tax = merged.tax_registration!;
      this.accounts.setTaxDetails(child.id, tax.nit.replace(/[\s-]/g, '').toUpperCase(), tax.legal_name.trim());
      this.emitToPlatform(child, 'verification.completed', verificationPayload(child, next, at));
    }
    if (status !== prev) {
      appendSyncRecord(this.ctx.db, {
        kind: 'connected_account_verification',
        accountId: child.id,
        liveMode: child.live_mode,
        createdAt: at,
        payload: {
          account_id: child.id,
          status,
          document_errors: errors,
          // Which documents were sent and when; their contents stay at the box that reviewed them.
          documents: Object.fromEntries(Object.entries(docs).map(([t, d]) => [t, d!.submitted_at])),
          reviewed_at: at,
          verified_at: next.verified_at,
          tax_id: status === 'verified' ? this.accounts.account(child.id)!.tax_id : null,
          tax_name: status === 'verified' ? this.accounts.account(child.id)!.tax_name : null,
        },
      });
    }
    return next;
  }

  // ---- commission invoicing (spec 2.8) ----

  defaultMode(platformId: string): Mode {
    const v = this.accounts.account(platformId)?.settings.commission_invoicing_default_mode;
    return v === 'daily' || v === 'none' ? v : this.ctx.config.connected.commission_invoicing_default_mode;
  }

  effectiveMode(p: ProfileRow): Mode {
    return p.commission_override_mode ?? this.defaultMode(p.parent_account_id);
  }

  commissionInvoicing(p: ProfileRow): CommissionInvoicing {
    return {
      mode: this.effectiveMode(p),
      override_mode: p.commission_override_mode,
      default_mode: this.defaultMode(p.parent_account_id),
      timezone: 'America/Guatemala',
      enabled_at: p.commission_enabled_at,
      disabled_at: p.commission_disabled_at,
    };
  }

  /** Opens or closes the eligible interval when the effective mode changed. Joins the caller's transaction. */
  private syncCommissionInterval(p: ProfileRow): void {
    const daily = this.effectiveMode(p) === 'daily';
    const open = p.commission_enabled_at !== null && p.commission_disabled_at === null;
    if (daily === open) return;
    const at = this.now();
    tx(this.ctx.db, () =>
      this.store.save(
        daily ? { ...p, commission_enabled_at: at, commission_disabled_at: null, updated_at: at } : { ...p, commission_disabled_at: at, updated_at: at },
      ),
    );
  }

  setCommissionOverride(platform: Account, childId: string, mode: Mode | null): CommissionInvoicing {
    return tx(this.ctx.db, () => {
      const p = this.profile(this.requireChild(platform, childId));
      this.store.save({ ...p, commission_override_mode: mode, updated_at: this.now() });
      this.syncCommissionInterval(this.store.get(childId)!);
      return this.commissionInvoicing(this.store.get(childId)!);
    });
  }

  setCommissionDefault(platform: Account, mode: Mode): Mode {
    return tx(this.ctx.db, () => {
      this.accounts.updateSettings(platform.id, { commission_invoicing_default_mode: mode });
      for (let offset = 0; ; offset += 100) {
        const { rows } = this.accounts.children(platform.id, 100, offset);
        for (const child of rows) this.syncCommissionInterval(this.profile(child));
        if (rows.length < 100) break;
      }
      return this.defaultMode(platform.id);
    });
  }

  // ---- electronic invoicing of a child (tax_invoice_settings.enabled) ----

  taxInvoicing(child: Account, p: ProfileRow): TaxInvoicing {
    return taxInvoicingView(child, p);
  }

  activateTaxInvoicing(platform: Account, childId: string, input: TaxInvoicingInput): TaxInvoicing {
    return tx(this.ctx.db, () => {
      const child = this.requireChild(platform, childId);
      const p = this.profile(child);
      const status = nextState(taxInvoicingMachine, p.tax_invoicing_status, { type: 'ACTIVATE' })!;
      const at = this.now();
      const next: ProfileRow = {
        ...p,
        tax_invoicing_status: status,
        tax_invoicing_public: JSON.stringify({ provider: input.provider, establishment_code: input.establishment_code }),
        // posd must reuse the certifier's credentials, so they are sealed with the box's key, not hashed:
        // a copy of the database alone must not let anyone issue invoices in the merchant's name.
        tax_invoicing_credentials: secretBoxOf(this.ctx).seal(JSON.stringify({ username: input.username, api_key: input.api_key })),
        tax_invoicing_activated_at: p.tax_invoicing_status === 'active' ? p.tax_invoicing_activated_at : at,
        updated_at: at,
      };
      this.store.save(next);
      // Activation fires once; saving new credentials on an active account is not a new activation.
      if (p.tax_invoicing_status !== 'active') this.emitToPlatform(child, 'tax_invoice_settings.enabled', taxInvoiceSettingsPayload(child, next, at));
      return this.taxInvoicing(child, next);
    });
  }
}
