export {
  formatSummary,
  NotFreshError,
  rebuildEventStates,
  replayStates,
  STATE_TOPICS,
  summaryOf,
  trimmedPartitions,
  type ReplayOptions,
  type StateEvent,
} from './replay.js';
export { exportEvents, type ExportFormat } from './export.js';
