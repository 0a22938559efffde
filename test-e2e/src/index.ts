export { RunningService, Stack, type ServiceDefinition, type StackOptions } from './harness.js';
