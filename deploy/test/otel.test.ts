import { describe, expect, it } from 'vitest';
import { tracingSettings } from '@mds/telemetry/tracing';
import { containerEnv, envProblems, ofKind, podTemplate } from './checks.js';
import { environments, renderService, RenderError, serviceValues } from './support.js';

// The chart passes OpenTelemetry's standard variables through (otel.endpoint, otel.env) and nothing of them
// without an endpoint: tracing stays off.

const services = serviceValues();
const [environment] = environments();
const gateway = services.find((s) => s.service.name === 'gateway')!;

async function gatewayEnv(set: Record<string, string>) {
  const manifests = await renderService(gateway, environment!.file, set);
  const [deployment] = ofKind(manifests, 'Deployment');
  return { env: containerEnv(podTemplate(deployment!).spec.containers[0]!, manifests), manifests };
}

const otelOf = (env: Map<string, { value?: string }>) =>
  Object.fromEntries([...env].filter(([name]) => name.startsWith('OTEL_')).map(([n, v]) => [n, v.value]));

describe('OpenTelemetry settings', () => {
  it('sets no OTEL_* variable without an endpoint, so the services trace nothing', async () => {
    const { env } = await gatewayEnv({});
    expect(otelOf(env)).toEqual({});
    expect(tracingSettings(Object.fromEntries([...env].map(([n, v]) => [n, v.value])))).toBeUndefined();
  });

  it('with an endpoint, passes it, names the service, and adds the other OTEL_* variables given', async () => {
    const { env } = await gatewayEnv({
      'otel.endpoint': 'http://otel-collector.observability:4318',
      'otel.env.OTEL_TRACES_SAMPLER': 'parentbased_traceidratio',
      'otel.env.OTEL_TRACES_SAMPLER_ARG': '0.1',
    });
    const otel = otelOf(env);
    expect(otel).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_SERVICE_NAME: 'gateway',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    });
    // What the services' start-up makes of them: tracing on, sampling a tenth of new traces.
    expect(tracingSettings(otel)).toMatchObject({ sampler: 'parentbased_traceidratio', samplerRatio: 0.1 });
    const schema = (await import('@mds/gateway/config')).configSchema;
    expect(envProblems('gateway Deployment', env, schema)).toEqual([]);
  });

  it('keeps a service name given in otel.env', async () => {
    const { env } = await gatewayEnv({
      'otel.endpoint': 'https://collector.example.com',
      'otel.env.OTEL_SERVICE_NAME': 'mds-gateway',
    });
    expect(otelOf(env)).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example.com',
      OTEL_SERVICE_NAME: 'mds-gateway',
    });
  });

  it('refuses an endpoint that is no http(s) URL and a variable outside OTEL_*', async () => {
    await expect(gatewayEnv({ 'otel.endpoint': 'collector:4318' })).rejects.toThrow(RenderError);
    await expect(
      gatewayEnv({ 'otel.endpoint': 'http://c:4318', 'otel.env.NODE_OPTIONS': '--inspect' }),
    ).rejects.toThrow(/NODE_OPTIONS/);
  });
});
