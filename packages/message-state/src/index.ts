export * from './domain/state.js';
export * from './domain/row.js';
export * from './domain/summary.js';
