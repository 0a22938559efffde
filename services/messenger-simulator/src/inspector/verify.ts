import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/** Why a delivery did not verify (or `verified`). */
export type VerifyReason = 'verified' | Failure;

type Failure =
  | 'missing_headers'
  | 'no_secret'
  | 'invalid_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'no_matching_signature';

export interface Verdict {
  verified: boolean;
  reason: VerifyReason;
  /** Said for a person: which secret verified it, or what is wrong. */
  detail: string;
}

const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** The library's messages (standardwebhooks 1.1.1) and what they mean here. */
const LIBRARY_REASONS: Record<string, Failure> = {
  'Message timestamp too old': 'timestamp_too_old',
  'Message timestamp too new': 'timestamp_too_new',
  'Invalid Signature Headers': 'invalid_timestamp',
  'No matching signature found': 'no_matching_signature',
};

const DETAILS: Record<Failure, string> = {
  missing_headers: 'unsigned: no webhook-id, webhook-timestamp and webhook-signature headers',
  no_secret: 'no secret registered for this inspector (PUT /control/inspector/<name>)',
  invalid_timestamp: 'webhook-timestamp is not a number of seconds',
  timestamp_too_old: 'webhook-timestamp is more than 5 minutes in the past (a replay?)',
  timestamp_too_new: 'webhook-timestamp is more than 5 minutes in the future',
  no_matching_signature: 'no signature matches any registered secret (forged, altered or another secret)',
};

/** A secret the library accepts (`whsec_` + base64 of a non-empty key), or why not. */
export function secretProblem(secret: string): string | undefined {
  if (!secret.startsWith('whsec_')) return 'a secret starts with "whsec_"';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(secret.slice('whsec_'.length)))
    return 'a secret is "whsec_" followed by base64';
  try {
    new Webhook(secret);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Verifies a delivery the way a company's receiver would, with the `standardwebhooks` library, under
 * each registered secret: any one verifying is enough.
 */
export function verifyDelivery(
  body: string,
  headers: Record<string, string>,
  secrets: readonly string[],
): Verdict {
  const missing = SIGNATURE_HEADERS.filter((name) => !headers[name]);
  if (missing.length === SIGNATURE_HEADERS.length) return failed('missing_headers');
  if (missing.length > 0)
    return { verified: false, reason: 'missing_headers', detail: `missing ${missing.join(', ')}` };
  if (secrets.length === 0) return failed('no_secret');
  let reason: Failure = 'no_matching_signature';
  for (const [index, secret] of secrets.entries()) {
    try {
      new Webhook(secret).verify(body, headers, { jsonParse: false });
      return {
        verified: true,
        reason: 'verified',
        detail: `signature verified with secret ${index + 1} of ${secrets.length}`,
      };
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      reason = LIBRARY_REASONS[error.message] ?? 'no_matching_signature';
    }
  }
  return failed(reason);
}

function failed(reason: Failure): Verdict {
  return { verified: false, reason, detail: DETAILS[reason] };
}
