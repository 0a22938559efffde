export {
  formatSummary,
  NotFreshError,
  rebuildEventStates,
  replayStates,
  STATE_TOPICS,
  summaryOf,
  type ReplayOptions,
  type StateEvent,
} from './replay.js';
export { exportEvents, type ExportFormat } from './export.js';
