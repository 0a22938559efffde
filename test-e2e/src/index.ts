export * from './harness.js';
export * from './sandbox.js';
