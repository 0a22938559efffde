import { describe, expect, it } from 'vitest';
import { topics, deliveryTopic } from '@mds/contracts';
import { ofKind } from './checks.js';
import { environments, renderService, serviceValues } from './support.js';

/** Each sender's delivery topic: keyed by bot, its partitions are shared out among the sender's replicas. */
const deliveryTopics: Record<string, { name: string; partitions: number }> = {
  'telegram-sender': deliveryTopic('telegram'),
  'max-sender': deliveryTopic('max'),
};

const senders = serviceValues().filter((s) => s.service.name.endsWith('-sender'));
const environment = environments().find((e) => e.name === 'environment')!.file;

describe('the senders', () => {
  it('are all known here, with their delivery topic', () => {
    expect(senders.map((s) => s.service.name).sort()).toEqual(Object.keys(deliveryTopics).sort());
  });

  it.each(senders.map((s) => [s.service.name, s] as const))(
    '%s: scales out to at most one replica per partition of its delivery topic, and has its alerts',
    async (name, service) => {
      const manifests = await renderService(service, environment);
      const [hpa] = ofKind(manifests, 'HorizontalPodAutoscaler');
      const { maxReplicas, minReplicas } = hpa!.spec as { maxReplicas: number; minReplicas: number };
      expect(minReplicas).toBeGreaterThanOrEqual(2);
      // A replica beyond the partition count owns no partition: it would only wait.
      expect(maxReplicas).toBeLessThanOrEqual(deliveryTopics[name]!.partitions);

      const [rule] = ofKind(manifests, 'PrometheusRule');
      const alerts = (rule!.spec as { groups: { rules: { alert: string }[] }[] }).groups
        .flatMap((g) => g.rules)
        .map((r) => r.alert);
      expect(alerts).toEqual(expect.arrayContaining(['MdsSenderFloodWaits', 'MdsSenderDeliveriesStuck']));
    },
  );
});
