export { Lifecycle } from './lifecycle.js';
export {
  accessLog,
  createHttpApp,
  listen,
  opsRoutes,
  requestId,
  type OpsOptions,
  type ReadinessCheck,
  type RunningHttpServer,
} from './http.js';
export { createMetricsRegistry, runService, type RunServiceOptions, type ServiceContext } from './service.js';
