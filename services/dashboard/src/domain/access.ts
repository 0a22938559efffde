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

/**
 * After a failed sign-in: the member's failures in a row, and until when the account is locked (each lockout
 * past the first doubles, up to a day, so guessing stays slow without locking a member out for good).
 */
export function afterFailure(
  failures: number,
  now: Date,
  policy: { lockoutFailures: number; lockoutMinutes: number },
): { failures: number; lockedUntil: Date | null } {
  const next = failures + 1;
  if (next < policy.lockoutFailures) return { failures: next, lockedUntil: null };
  const lockouts = Math.floor(next / policy.lockoutFailures);
  const minutes = Math.min(24 * 60, policy.lockoutMinutes * 2 ** (lockouts - 1));
  return {
    failures: next,
    lockedUntil: next % policy.lockoutFailures === 0 ? new Date(now.getTime() + minutes * 60_000) : null,
  };
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
