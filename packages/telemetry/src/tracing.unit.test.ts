import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceNameOf, TelemetryConfigError, tracingSettings } from './tracing.js';

const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('tracingSettings', () => {
  it('is off when no OTLP endpoint is set, whatever else is', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined();
  });

  it('is off when disabled or with exporter "none", endpoint or not', () => {
    expect(tracingSettings({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingSettings({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('is on with the general or the traces endpoint, OTLP/HTTP protobuf and parent-based sampling by default', () => {
    for (const env of [endpoint, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }]) {
      expect(tracingSettings(env)).toEqual({
        protocol: 'http/protobuf',
        sampler: 'parentbased_always_on',
        samplerRatio: 1,
        batch: {},
      });
    }
  });

  it('reads the protocol (the traces one first), the sampler and the batch processor variables', () => {
    expect(
      tracingSettings({
        ...endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_BSP_EXPORT_TIMEOUT: '1000',
        OTEL_BSP_MAX_QUEUE_SIZE: '4096',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '256',
      }),
    ).toEqual({
      protocol: 'http/json',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      batch: {
        scheduledDelayMillis: 200,
        exportTimeoutMillis: 1000,
        maxQueueSize: 4096,
        maxExportBatchSize: 256,
      },
    });
  });

  it('refuses what it cannot do, naming the variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [
        { ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
        /OTEL_EXPORTER_OTLP_PROTOCOL: only "http\/protobuf"/,
      ],
      [{ ...endpoint, OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER: only "otlp" and "none"/],
      [{ ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER/],
      [{ ...endpoint, OTEL_TRACES_SAMPLER_ARG: '2' }, /OTEL_TRACES_SAMPLER_ARG/],
      [{ ...endpoint, OTEL_BSP_SCHEDULE_DELAY: 'soon' }, /OTEL_BSP_SCHEDULE_DELAY/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT/],
    ];
    for (const [env, message] of cases) {
      expect(() => tracingSettings(env)).toThrow(TelemetryConfigError);
      expect(() => tracingSettings(env)).toThrow(message);
    }
  });
});

describe('serviceNameOf', () => {
  it("is the name of the script's package without its scope", () => {
    expect(serviceNameOf(join(import.meta.dirname, 'start.ts'))).toBe('telemetry');
  });

  it('is undefined without a script', () => {
    expect(serviceNameOf(undefined)).toBeUndefined();
  });
});
