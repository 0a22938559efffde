export * from './seal.js';
export * from './keys.js';
export * from './records.js';
