export * from './seal.js';
export * from './keys.js';
export * from './records.js';
export * from './registry-keys.js';
export * from './subjects.js';
export * from './retention.js';
export * from './config.js';
export * from './forgotten.js';
