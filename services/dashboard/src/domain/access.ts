/** Rules of signing in, apart from storage and crypto. */

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(
  password: string,
  email: string,
): 'too_short' | 'too_long' | 'is_email' | undefined {
  if ([...password].length < PASSWORD_MIN) return 'too_short';
  if ([...password].length > PASSWORD_MAX) return 'too_long';
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'is_email';
  return undefined;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** How sign-ins for one email slow down as they fail: free at first, then ever longer waits (never a hard lock). */
export interface SignInThrottle {
  /** Failed sign-ins in a row an email may have before the next attempt waits. */
  freeFailures: number;
  /** The longest wait between attempts (the doubling stops there). */
  maxDelaySeconds: number;
}

/**
 * How long the next sign-in for an email waits after its `failures`-th attempt in a row that did not succeed:
 * nothing for the first `freeFailures`, then 1 s, doubling with each further one, up to `maxDelaySeconds`. Anyone
 * can slow a known member's sign-in down this way, but never lock them out for longer than the cap; the
 * member's own right password, once let through, starts the count again.
 */
export function signInDelaySeconds(failures: number, policy: SignInThrottle): number {
  if (failures < policy.freeFailures) return 0;
  return Math.min(policy.maxDelaySeconds, 2 ** Math.min(30, failures - policy.freeFailures));
}

/** When a session ends: after `idleMinutes` without use, and `maxHours` after it began in any case. */
export function sessionExpiry(
  createdAt: Date,
  lastSeenAt: Date,
  idleMinutes: number,
  maxHours: number,
): Date {
  return new Date(
    Math.min(lastSeenAt.getTime() + idleMinutes * 60_000, createdAt.getTime() + maxHours * 3_600_000),
  );
}
