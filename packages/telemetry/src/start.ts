/**
 * Imported first by every service's main module (`import '@mds/telemetry/start'`), before anything that
 * the instrumentations patch is loaded. With no OTLP endpoint in the OTEL_* variables it loads nothing
 * more and tracing costs nothing; with one, it starts the SDK. A variable it cannot use stops the process
 * with one line saying which, as a misconfigured service does.
 *
 * Synchronous on purpose: a module with a top-level await lets the main module's other imports (express,
 * pg, gRPC) run before it has finished, unpatched. The SDK is loaded with require (Node loads an ES module
 * graph synchronously that way), and only when tracing is on.
 */
import { createRequire } from 'node:module';
import { tracingStarted } from './index.js';
import type { startSdk as StartSdk } from './sdk.js';
import { serviceNameOf, TelemetryConfigError, tracingSettings, type TracingSettings } from './tracing.js';

let settings: TracingSettings | undefined;
try {
  settings = tracingSettings(process.env);
} catch (error) {
  if (!(error instanceof TelemetryConfigError)) throw error;
  console.error(`telemetry: ${error.message}`);
  process.exit(1);
}
if (settings) {
  const { startSdk } = createRequire(import.meta.url)('./sdk.js') as { startSdk: typeof StartSdk };
  const name = process.env.OTEL_SERVICE_NAME || serviceNameOf(process.argv[1]) || 'unknown_service:node';
  tracingStarted(startSdk(settings, name, process.argv[1]));
}
