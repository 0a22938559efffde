// The stack of processes now lives in @mds/testkit, where services' benchmarks use it too.
export {
  RunningService,
  senderService,
  simulatorAndRegistry,
  Stack,
  type ServiceDefinition,
  type StackOptions,
} from '@mds/testkit';
