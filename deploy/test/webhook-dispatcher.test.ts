import { describe, expect, it } from 'vitest';
import { containerEnv, ofKind, podTemplate } from './checks.js';
import { environments, renderService, serviceValues } from './support.js';

const dispatcher = serviceValues().find((s) => s.service.name === 'webhook-dispatcher')!;

describe.each(environments())('the webhook dispatcher, $name environment', ({ file }) => {
  it('autoscales from 2 replicas, delivers to public addresses only, and has its alerts', async () => {
    const manifests = await renderService(dispatcher, file);
    const [hpa] = ofKind(manifests, 'HorizontalPodAutoscaler');
    const { maxReplicas, minReplicas } = hpa!.spec as { maxReplicas: number; minReplicas: number };
    expect(minReplicas).toBeGreaterThanOrEqual(2);
    expect(maxReplicas).toBeGreaterThan(minReplicas);

    const container = podTemplate(ofKind(manifests, 'Deployment')[0]!).spec.containers[0]!;
    const env = containerEnv(container, manifests);
    expect(env.get('WEBHOOK_SSRF_ALLOWLIST')?.value.trim() ?? '').toBe('');
    // Set explicitly so that the release checks hold SHUTDOWN_TIMEOUT_MS against it.
    expect(env.get('WEBHOOK_TIMEOUT_MS')?.value).toBe('15000');
    expect(env.get('DISPATCHER_ADMIN_TOKEN')).toMatchObject({ fromSecret: true, optional: false });

    const [rule] = ofKind(manifests, 'PrometheusRule');
    if (!rule) return; // an environment without the Prometheus Operator
    const alerts = (rule.spec as { groups: { rules: { alert: string }[] }[] }).groups
      .flatMap((g) => g.rules)
      .map((r) => r.alert);
    expect(alerts).toEqual(
      expect.arrayContaining([
        'MdsWebhookDeliveriesAbandoned',
        'MdsWebhookEndpointsDisabled',
        'MdsWebhookAttemptsFailing',
        'MdsWebhookBacklog',
      ]),
    );
  });
});
