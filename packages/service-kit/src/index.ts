export { Lifecycle } from './lifecycle.js';
export {
  accessLog,
  bearerGuard,
  createHttpApp,
  listen,
  listenOps,
  opsRoutes,
  serveHttp,
  requestId,
  type OpsOptions,
  type ReadinessCheck,
  type RunningHttpServer,
} from './http.js';
export {
  createMetricsRegistry,
  loadConfigOrExit,
  runService,
  serviceMain,
  type RunServiceOptions,
  type ServiceContext,
} from './service.js';
export {
  fieldErrors,
  notFoundHandler,
  parseOr422,
  Problem,
  jsonResponse,
  problemBodySchema,
  problemResponse,
  problemHandler,
  validationProblem,
  writeProblem,
  type FieldError,
} from './problems.js';
export {
  adminCallerOf,
  adminCallers,
  ASSERTION_TTL_SECONDS,
  companyScope,
  dashboardPublicKeys,
  dashboardSigningKey,
  mayActFor,
  operatorOnly,
  publicKeyOf,
  signCompanyAssertion,
  verifyCompanyAssertion,
  type AdminCaller,
  type CompanyActor,
} from './admin-callers.js';
export { INVALID_CHARACTERS, jsonBody, refuseInvalidCharacters } from './request-text.js';
export { loadMessengerPlugins } from './messenger-plugins.js';
