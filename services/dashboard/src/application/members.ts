import type { Role } from '../domain/roles.js';

/** A member of a company as the dashboard keeps it, and why an access operation was refused. */
export interface Member {
  member_id: string;
  company_id: string;
  email: string;
  name: string;
  role: Role;
  created_at: Date;
  last_sign_in_at: Date | null;
  has_password: boolean;
  locked_until: Date | null;
}

export interface AccessPolicy {
  sessionIdleMinutes: number;
  sessionMaxHours: number;
  /** Sign-ins per email: free failures, then waits doubling up to the cap (see signInDelaySeconds). */
  signInFreeFailures: number;
  signInMaxDelaySeconds: number;
  signInsPerAddressPerMinute: number;
  linkHours: number;
}

/** Why an access operation was refused: a stable code the HTTP layer turns into a problem. */
export class AccessError extends Error {
  constructor(
    readonly code:
      | 'invalid_credentials'
      | 'too_many_attempts'
      | 'email_taken'
      | 'member_not_found'
      | 'link_invalid'
      | 'weak_password'
      | 'last_owner'
      | 'owner_reset_refused',
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** A member as stored: with the hash of their password, which never leaves the application. */
export type MemberRow = Omit<Member, 'has_password'> & { password_hash: string | null };
export const toMember = ({ password_hash, ...row }: MemberRow): Member => ({
  ...row,
  has_password: Boolean(password_hash),
});
