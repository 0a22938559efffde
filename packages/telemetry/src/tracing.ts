import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/**
 * The standard OTEL_* variables this start-up reads itself (the OTLP exporter reads its own
 * OTEL_EXPORTER_OTLP_* ones, the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES). Tracing is on
 * only when an OTLP endpoint is set: unset, nothing of the SDK is even loaded.
 */
const tracingEnv = z.object({
  OTEL_SDK_DISABLED: z.enum(['true', 'false', '']).default('false'),
  OTEL_TRACES_EXPORTER: z
    .enum(['otlp', 'none', ''], { message: 'only "otlp" and "none" are supported' })
    .default('otlp'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url({ protocol: /^https?$/ })
    .optional()
    .or(z.literal('')),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
    .url({ protocol: /^https?$/ })
    .optional()
    .or(z.literal('')),
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(['http/protobuf', 'http/json', ''], {
      message: 'only "http/protobuf" and "http/json" are supported',
    })
    .optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z
    .enum(['http/protobuf', 'http/json', ''], {
      message: 'only "http/protobuf" and "http/json" are supported',
    })
    .optional(),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
      '',
    ])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().positive().optional(),
  OTEL_BSP_EXPORT_TIMEOUT: z.coerce.number().int().positive().optional(),
  OTEL_BSP_MAX_QUEUE_SIZE: z.coerce.number().int().positive().optional(),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: z.coerce.number().int().positive().optional(),
});

export type TracingSettings = {
  protocol: 'http/protobuf' | 'http/json';
  sampler: string;
  samplerRatio: number;
  batch: {
    scheduledDelayMillis?: number;
    exportTimeoutMillis?: number;
    maxQueueSize?: number;
    maxExportBatchSize?: number;
  };
};

export class TelemetryConfigError extends Error {
  override readonly name = 'TelemetryConfigError';
}

/** What the environment asks of tracing: undefined when it is off (no endpoint, disabled, exporter none). */
export function tracingSettings(env: NodeJS.ProcessEnv): TracingSettings | undefined {
  const parsed = tracingEnv.safeParse(env);
  if (!parsed.success) {
    throw new TelemetryConfigError(
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
  const e = parsed.data;
  if (e.OTEL_SDK_DISABLED === 'true' || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  if (!e.OTEL_EXPORTER_OTLP_ENDPOINT && !e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  const batch: TracingSettings['batch'] = {};
  if (e.OTEL_BSP_SCHEDULE_DELAY) batch.scheduledDelayMillis = e.OTEL_BSP_SCHEDULE_DELAY;
  if (e.OTEL_BSP_EXPORT_TIMEOUT) batch.exportTimeoutMillis = e.OTEL_BSP_EXPORT_TIMEOUT;
  if (e.OTEL_BSP_MAX_QUEUE_SIZE) batch.maxQueueSize = e.OTEL_BSP_MAX_QUEUE_SIZE;
  if (e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE) batch.maxExportBatchSize = e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE;
  return {
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || e.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf',
    sampler: e.OTEL_TRACES_SAMPLER || 'parentbased_always_on',
    samplerRatio: e.OTEL_TRACES_SAMPLER_ARG ?? 1,
    batch,
  };
}

/**
 * The service's name when OTEL_SERVICE_NAME does not give one: its package's name without the scope
 * ("@mds/gateway" -> "gateway"), found from the script node runs.
 */
export function serviceNameOf(script: string | undefined): string | undefined {
  let dir = script ? dirname(script) : undefined;
  for (let i = 0; dir && i < 5; i++, dir = dirname(dir)) {
    try {
      const { name } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (name) return name.replace(/^@[^/]+\//, '');
    } catch {
      // no package.json here: look one level up
    }
  }
  return undefined;
}
