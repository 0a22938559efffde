export {
  filterOf,
  formatSummary,
  NotFreshError,
  rebuildEventStates,
  replayStates,
  summaryOf,
  type ReplayOptions,
} from './replay.js';
export { STATE_STREAMS } from './fold.js';
export { readLog, defaultThreads } from './shards.js';
export {
  EVENTS_COLUMNS,
  exportLog,
  FOLDED_TABLES,
  type ExportFormat,
  type ExportOptions,
  type ExportResult,
} from './export.js';
export { replayStreams, streamKeys, streamsByName, streamSpec, type StreamKey } from './streams.js';
export { eventTables, descriptorSetPath, type Column } from './schema.js';
export { queryExport, formatResult, REPORTS } from './query.js';
