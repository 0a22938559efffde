import { join } from 'node:path';
import cookieParser from 'cookie-parser';
import express from 'express';
import type { KeyObject } from 'node:crypto';
import {
  dashboardSigningKey,
  jsonBody,
  listen,
  notFoundHandler,
  Problem,
  problemHandler,
  requestId,
  signCompanyAssertion,
  type ServiceContext,
} from '@mds/service-kit';
import { openFoundation, serveService, startRetention } from '@mds/service-kit/platform';
import { createAccessStore } from './adapters/db/access-store.js';
import { createJsonClient } from './adapters/services/http-json.js';
import { AccessError, createAccess } from './application/access.js';
import { createReadModelConsumer, reportReadModelLag } from './api/kafka/read-models.js';
import { createApiRequestConsumer } from './api/kafka/api-requests.js';
import { API_REQUEST_LOG_DAYS } from '@mds/contracts';
import { auditLogRetention, forgetInReadModels } from './adapters/db/personal-data.js';
import { forgottenConsumer, outliving, cachedRegistryPersonKeys } from '@mds/personal-data';
import type { Config } from './config.js';
import { auditEveryChange, noticedAudit } from './api/http/audit-guard.js';
import { auditRouter } from './api/http/audit-routes.js';
import { authRouter } from './api/http/auth-routes.js';
import { companyRouter } from './api/http/company-routes.js';
import type { Actor, ApiDeps } from './api/http/deps.js';
import { logRouter } from './api/http/log-routes.js';
import { operatorRouter } from './api/http/operator-routes.js';
import { cookieSettings, csrfGuard, loadSession } from './api/http/session.js';
import { webRouter } from './api/http/web.js';
import { deployment } from './provision.js';

export { configSchema, type Config } from './config.js';
export { readTopics } from './provision.js';

const ACCESS_STATUS: Record<AccessError['code'], number> = {
  invalid_credentials: 401,
  too_many_attempts: 429,
  email_taken: 409,
  member_not_found: 404,
  link_invalid: 410,
  weak_password: 422,
  last_owner: 409,
  owner_reset_refused: 403,
};

/** Access refusals as problems with their codes (and Retry-After where waiting helps). */
function accessProblems(
  error: unknown,
  _req: express.Request,
  _res: express.Response,
  next: express.NextFunction,
) {
  if (!(error instanceof AccessError)) return next(error);
  const retry: Record<string, string> = error.retryAfterSeconds
    ? { 'Retry-After': String(error.retryAfterSeconds) }
    : {};
  if (error.code === 'weak_password') {
    return next(
      new Problem(
        422,
        'weak_password',
        'Password not accepted',
        'Use at least 12 characters, not your email.',
        [{ pointer: '#/password', detail: error.message, code: error.message }],
      ),
    );
  }
  next(
    new Problem(
      ACCESS_STATUS[error.code],
      error.code,
      error.code.replaceAll('_', ' '),
      error.message,
      undefined,
      retry,
    ),
  );
}

/** Builds and starts the dashboard; everything started is registered with the lifecycle to stop in reverse. */
export async function startDashboard(
  config: Config,
  context: ServiceContext,
  { now = () => new Date() }: { now?: () => Date } = {},
): Promise<{ httpPort: number; operatorPort: number }> {
  const { logger, lifecycle } = context;
  const foundation = await openFoundation(deployment, config, context);
  const { metrics, settings, kafka, db, deadLetters } = foundation;

  const access = createAccess({
    store: createAccessStore(db),
    now,
    policy: {
      sessionIdleMinutes: config.SESSION_IDLE_MINUTES,
      sessionMaxHours: config.SESSION_MAX_HOURS,
      signInFreeFailures: config.SIGN_IN_FREE_FAILURES,
      signInMaxDelaySeconds: config.SIGN_IN_MAX_DELAY_SECONDS,
      signInsPerAddressPerMinute: config.SIGN_IN_PER_ADDRESS_PER_MINUTE,
      linkHours: config.ONE_TIME_LINK_HOURS,
    },
  });
  const sweeper = setInterval(() => {
    access.sweep().catch((error: unknown) => logger.warn({ err: error }, 'could not sweep expired sessions'));
  }, 600_000);
  lifecycle.onStop('session sweeper', () => clearInterval(sweeper));

  const signingKey = dashboardSigningKey(config.DASHBOARD_SIGNING_KEY);
  const deps: ApiDeps = {
    db,
    access: noticedAudit(access),
    registry: actingFor(signingKey, 'client-registry', config.REGISTRY_URL),
    // A test event waits for the company's endpoint (15 s at most) and the registry.
    dispatcher: actingFor(signingKey, 'webhook-dispatcher', config.DISPATCHER_URL, 25_000),
    gateway: actingFor(signingKey, 'gateway', config.GATEWAY_URL, undefined, '/api/v1'),
    cookies: cookieSettings(config.COOKIE_SECURE, config.SESSION_MAX_HOURS),
    publicUrl: config.PUBLIC_URL,
    liveRefreshMs: config.LIVE_REFRESH_MS,
    now,
  };

  const token = config.INTERNAL_GRPC_TOKEN;
  const personKeys = token
    ? cachedRegistryPersonKeys({ ...config, INTERNAL_GRPC_TOKEN: token }, lifecycle)
    : undefined;
  if (!personKeys)
    logger.warn('INTERNAL_GRPC_TOKEN is not set: numbers and texts sealed in events are not shown');
  const consumer = createReadModelConsumer({
    kafka,
    logger,
    db,
    deadLetters,
    topicPrefix: settings.topicPrefix ?? '',
    metrics,
    ...(personKeys ? { personKeys } : {}),
  });
  const apiRequests = createApiRequestConsumer({
    kafka,
    logger,
    db,
    deadLetters,
    topicPrefix: settings.topicPrefix ?? '',
    metrics,
  });
  const forgetting = forgottenConsumer({
    kafka,
    logger,
    metrics,
    topicPrefix: settings.topicPrefix,
    group: 'dashboard.forget',
    keyCache: personKeys,
    purge: (companyId, subjectId) => forgetInReadModels(db, companyId, subjectId),
    deadLetters,
  });
  const stopLagReports = reportReadModelLag({ consumer, db, logger, now, everyMs: 2_000 });
  lifecycle.onStop('lag reports', () => stopLagReports());
  const days = config.RETENTION_MESSAGES_DAYS;
  startRetention(foundation, context, config, {
    rules: [
      { table: 'messages', column: 'sort_at', days },
      { table: 'timeline', column: 'at', days },
      { table: 'webhook_deliveries', column: 'last_attempt_at', days, onlyWhere: `status <> 'pending'` },
      { table: 'webhook_endpoint_failures', column: 'at', days },
      { table: 'personal_data_subjects', column: 'recorded_at', days: outliving(days) },
      { table: 'outcome_minutes', column: 'minute', days: config.RETENTION_MINUTES_DAYS },
      { table: 'webhook_minutes', column: 'minute', days: config.RETENTION_MINUTES_DAYS },
      ...auditLogRetention(config.RETENTION_AUDIT_LOG_DAYS),
      // As long as its topic keeps it.
      { table: 'api_requests', column: 'at', days: API_REQUEST_LOG_DAYS },
    ],
  });

  const http = await serveService(context, foundation, {
    config,
    readiness: [{ name: 'kafka', check: () => consumer.healthy() }],
    routes: (app) => {
      // Behind the proxies TRUST_PROXY names, the client's address (sign-in limits) is in X-Forwarded-For.
      if (config.TRUST_PROXY !== undefined) app.set('trust proxy', config.TRUST_PROXY);
      const api = express.Router();
      api.use(jsonBody({ limit: '64kb' }));
      api.use(cookieParser());
      api.use(loadSession(access, deps.cookies));
      api.use(csrfGuard(config.PUBLIC_URL));
      api.use(auditEveryChange(access, logger));
      api.use((_req, res, next) => {
        res.setHeader('Cache-Control', 'no-store');
        next();
      });
      api.use(authRouter(deps));
      api.use(companyRouter(deps));
      api.use(logRouter(deps));
      api.use(auditRouter(deps));
      api.use(notFoundHandler());
      app.use('/api', api);
      app.use(
        webRouter(config.WEB_ROOT ?? join(import.meta.dirname, '..', 'dist', 'web'), {
          hsts: config.COOKIE_SECURE,
        }),
      );
    },
    errorHandlers: [accessProblems],
    startLast: [
      { name: 'kafka consumer', start: () => consumer.start(), stop: () => consumer.stop() },
      { name: 'forget consumer', start: () => forgetting.start(), stop: () => forgetting.stop() },
      { name: 'API request log', start: () => apiRequests.start(), stop: () => apiRequests.stop() },
    ],
  });
  const operatorPort = await serveOperatorApi(deps, config, context);
  return { httpPort: http.port, operatorPort };
}

/**
 * The operator's API (/admin/v1: a company's first owner, reset links for any member) on a listener of its own,
 * never the public port: loopback unless OPERATOR_HOST says otherwise (in a cluster, a Service port no Ingress
 * routes to).
 */
async function serveOperatorApi(deps: ApiDeps, config: Config, { logger, lifecycle }: ServiceContext) {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestId());
  app.use('/admin/v1', operatorRouter(deps, config.DASHBOARD_ADMIN_TOKEN));
  app.use(notFoundHandler());
  app.use(accessProblems);
  app.use(problemHandler(logger));
  const server = await listen(app, config.OPERATOR_HOST, config.OPERATOR_PORT);
  lifecycle.onStop('operator http', () => server.close());
  return server.port;
}

/**
 * A service's API (its admin API unless told) called as the dashboard acting for one member of one company (a
 * signed assertion each call).
 */
function actingFor(
  signingKey: KeyObject,
  audience: string,
  url: string,
  timeoutMs?: number,
  api = '/admin/v1',
) {
  const baseUrl = `${url.replace(/\/$/, '')}${api}`;
  return (actor: Actor) =>
    createJsonClient({
      name: audience,
      baseUrl,
      ...(timeoutMs ? { timeoutMs } : {}),
      authorize: async () => ({
        authorization: `Bearer ${await signCompanyAssertion(signingKey, audience, {
          companyId: actor.company_id,
          memberId: actor.member_id,
          role: actor.role,
        })}`,
      }),
    });
}
