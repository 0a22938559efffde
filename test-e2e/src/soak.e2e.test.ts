import { expect, it } from 'vitest';
import { runSoak, soakOptionsFromEnv } from './soak.js';

// The short form of the soak (`npm run soak` runs it for 10 minutes): the same program for 2 minutes of
// load, every fault kind once with short calms between them (client-registry still held down 65 s, past
// the senders' 60 s credential cache), then every invariant checked. Fails on any violation.

it('the short soak: every fault once under a mixed load, zero violations', { timeout: 600_000 }, async () => {
  const result = await runSoak({
    ...soakOptionsFromEnv({
      SOAK_MINUTES: '2',
      ...(process.env.SOAK_SEED ? { SOAK_SEED: process.env.SOAK_SEED } : {}),
    }),
    gapMs: [3_000, 6_000],
    registryDownMs: 65_000,
    faultWindowMs: 6_000,
  });
  console.log(result.table);
  expect(result.violations, result.table).toBe(0);
});
