import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { sameToken } from '../../api/html.js';
import { managerByToken } from './managers.js';
import { currentSession } from './session.js';

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The named manager behind an API request that changes the offline policy: `X-Manager-Token` (a
 * token `posd managers token` issued), or the status page's session cookie together with that
 * session's CSRF token in `X-CSRF-Token` (a cookie alone could be sent by any page the browser
 * opens). The secret key the till holds is never enough: without either, 403
 * `manager_credential_required` and nothing changes. Returns the name the audit records.
 */
export function requireManager(ctx: AppContext, req: FastifyRequest): string {
  const token = header(req, 'x-manager-token');
  if (token) {
    const m = managerByToken(ctx.db, token.trim());
    if (m) return m.name;
    throw new ApiError('manager_credential_required', {
      message: 'The X-Manager-Token is not a manager token of this box (removed, or replaced by a newer one).',
    });
  }
  const session = currentSession(ctx, req);
  if (session && sameToken(header(req, 'x-csrf-token'), session.csrf)) return session.manager_name;
  throw new ApiError('manager_credential_required');
}
