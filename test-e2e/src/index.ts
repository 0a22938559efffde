export {
  RunningService,
  simulatorAndRegistry,
  Stack,
  type ServiceDefinition,
  type StackOptions,
} from './harness.js';
export * from './sandbox.js';
