/** What a member may do: owners everything, developers build the integration, viewers look. */
export const ROLES = ['owner', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Everything a member may be allowed, in the order the API lists a member's permissions. */
export const PERMISSIONS = [
  /** Every page's reading. */
  'read',
  'manage-keys',
  'manage-webhook',
  /** Reveal the webhook's signing secrets (they let anyone forge the company's webhooks). */
  'reveal-secrets',
  'manage-bots',
  'send',
  'change-phone',
  'resend-webhooks',
  'manage-members',
  /** Read the audit trail: who did what here, and when. */
  'read-audit',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const DEVELOPER: readonly Permission[] = [
  'read',
  'manage-keys',
  'manage-webhook',
  'reveal-secrets',
  'manage-bots',
  'send',
  'change-phone',
  'resend-webhooks',
];

const GRANTS: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set<Permission>([...DEVELOPER, 'manage-members', 'read-audit']),
  developer: new Set(DEVELOPER),
  viewer: new Set<Permission>(['read']),
};

export function can(role: Role, permission: Permission): boolean {
  return GRANTS[role].has(permission);
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
