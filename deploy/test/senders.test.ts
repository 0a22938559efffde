import { describe, expect, it } from 'vitest';
import { BUILT_IN_MESSENGERS, deliveryTopic, messengerNamed } from '@mds/contracts';
import { ofKind } from './checks.js';
import { environments, renderService, serviceValues, type ServiceValues } from './support.js';

/** The sender's releases: one per messenger, all of the one sender image, told their messenger by MESSENGER. */
const senders = serviceValues().filter((s) => s.service.package === '@mds/sender');
const environment = environments().find((e) => e.name === 'environment')!.file;
const messengerOf = (s: ServiceValues) =>
  messengerNamed(String((s.env as { MESSENGER?: string }).MESSENGER))!;

describe('the senders', () => {
  it('are one release per built-in messenger, named as before the one sender service, of one image', () => {
    expect(senders.map((s) => s.service.name).sort()).toEqual(
      BUILT_IN_MESSENGERS.map((m) => m.sender).sort(),
    );
    for (const s of senders) {
      expect(messengerOf(s), `${s.file}: env.MESSENGER`).toBeDefined();
      expect(messengerOf(s).sender).toBe(s.service.name);
      expect((s.image as { repository: string }).repository).toBe('mds/sender');
      expect((s.kafkaUser as { reads: string[] }).reads).toEqual([messengerOf(s).deliveryTopic]);
    }
  });

  it.each(senders.map((s) => [s.service.name, s] as const))(
    '%s: scales out to at most one replica per partition of its delivery topic, and has its alerts',
    async (_name, service) => {
      const manifests = await renderService(service, environment);
      const [hpa] = ofKind(manifests, 'HorizontalPodAutoscaler');
      const { maxReplicas, minReplicas } = hpa!.spec as { maxReplicas: number; minReplicas: number };
      expect(minReplicas).toBeGreaterThanOrEqual(2);
      // A replica beyond the partition count owns no partition: it would only wait.
      expect(maxReplicas).toBeLessThanOrEqual(deliveryTopic(messengerOf(service).name).partitions);

      const [rule] = ofKind(manifests, 'PrometheusRule');
      const alerts = (rule!.spec as { groups: { rules: { alert: string }[] }[] }).groups
        .flatMap((g) => g.rules)
        .map((r) => r.alert);
      expect(alerts).toEqual(expect.arrayContaining(['MdsSenderFloodWaits', 'MdsSenderDeliveriesStuck']));
    },
  );
});
