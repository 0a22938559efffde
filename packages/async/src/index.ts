export { wakeableLoop, type WakeableLoop } from './loop.js';
export { backoffDelays, retryUntil, type RetryOptions } from './retry.js';
