// `npm run soak`: the bounded soak (src/soak.ts) for SOAK_MINUTES (10) with a seed (SOAK_SEED, random by
// default, printed to repeat a run); prints its table and exits non-zero on any violation.
import { runSoak, soakOptionsFromEnv } from './soak.js';

const result = await runSoak(soakOptionsFromEnv());
console.log(result.table);
process.exit(result.violations > 0 ? 1 : 0);
