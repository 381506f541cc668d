import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { invalid } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { usersStore, type UserRow } from './store.js';

export interface User {
  id: string;
  account_id: string;
  live_mode: boolean;
  email: string;
  name: string | null;
  /** The hosted name of `name`. */
  full_name: string | null;
  phone: string | null;
  created_at: string;
}

function toUser(r: UserRow): User {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    email: r.email,
    name: r.name,
    full_name: r.name,
    phone: r.phone,
    created_at: r.created_at,
  };
}

/** An account's user by e-mail, created when new (the e-mail is the natural key, as for customers). */
export function createUser(
  ctx: AppContext,
  account: Account,
  input: { email: string; name?: string | null; full_name?: string | null; phone?: string | null },
): { user: User; created: boolean } {
  const email = input.email.trim().toLowerCase();
  if (input.name !== undefined && input.full_name !== undefined && input.name !== input.full_name)
    throw invalid({ full_name: 'must equal name when both are sent' });
  const name = input.name ?? input.full_name ?? null;
  return tx(ctx.db, () => {
    const store = usersStore(ctx.db);
    const row: UserRow = {
      id: newId('us'),
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      email,
      name,
      phone: input.phone ?? null,
      created_at: isoTime(ctx.clock.now()),
    };
    const created = store.insert(row);
    return { user: toUser(created ? row : store.byEmail(account.id, email)!), created };
  });
}

export function getUser(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): User | undefined {
  const row = usersStore(ctx.db).byId(id);
  return row && accountIds.includes(row.account_id) && (row.live_mode === 1) === liveMode ? toUser(row) : undefined;
}

export function listUsers(ctx: AppContext, accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: User[]; total: number } {
  const { rows, total } = usersStore(ctx.db).list(accountIds, liveMode, limit, offset);
  return { rows: rows.map(toUser), total };
}

/** The account's user with that e-mail (a customer's answer names it as `user_id`, as hosted). */
export function userIdByEmail(ctx: AppContext, accountId: string, email: string): string | undefined {
  return usersStore(ctx.db).byEmail(accountId, email.trim().toLowerCase())?.id;
}
