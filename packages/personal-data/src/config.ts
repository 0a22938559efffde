import { z } from '@mds/config';

const days = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

/** Settings of every service that opens or seals personal data, or keeps tables that age. */
export const personalDataEnv = {
  PERSON_KEY_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60_000)
    .describe(
      'How long a person key is used without asking client-registry again: a person forgotten elsewhere stops being readable here within this (at once where ClientForgotten arrives first).',
    ),
  PERSON_KEY_CACHE_MAX_ENTRIES: z.coerce
    .number()
    .int()
    .positive()
    .default(100_000)
    .describe('Person keys kept in memory (about 150 bytes each).'),
  RETENTION_INTERVAL_MINUTES: z.coerce
    .number()
    .positive()
    .default(60)
    .describe('How often old rows are removed.'),
  RETENTION_BATCH_SIZE: z.coerce
    .number()
    .int()
    .positive()
    .default(1_000)
    .describe(
      'How many old rows one retention statement removes (each run goes on until none is left past its age).',
    ),
  RETENTION_DEAD_LETTERS_DAYS: days(90).describe(
    'Days records set aside in the `dead_letters` table (undecodable events, unreadable outbox rows) are kept for an operator to look at; 0 keeps them for ever.',
  ),
};

/** A retention setting in days (0 keeps rows for ever). */
export const retentionDays = days;
