import { Anchor, Badge, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useT } from '../i18n/locale.js';
import type { MessageKey } from '../i18n/en.js';
import type { DeliveryRow, EndpointWithHealth } from '../types.js';
import { endpointName } from './EndpointCard.js';
import { EndpointStateBadges, HealthFigures } from './EndpointHealth.js';

/** A delivery as the deliveries list answers it: with the message it is about, when it is one. */
export interface DeliveryView extends DeliveryRow {
  subject: { phone: string | null; state: string } | null;
}

export const DELIVERY_KINDS = ['message.status', 'client.check', 'client.phone_changed'] as const;

/** A notification type in words ("Message status"), or as it is when the dashboard does not know it. */
export function useKindLabel() {
  const t = useT();
  return (kind: string) => {
    const key = `kind.${kind}`;
    return DELIVERY_KINDS.includes(kind as never) ? t(key as MessageKey) : kind;
  };
}

/**
 * What a delivery is about, in words and linked to its timeline (a message, a client check or a phone change),
 * with its whole event id underneath: the id the customer's own logs hold.
 */
export function DeliveryAbout({ delivery }: { delivery: DeliveryView }) {
  const t = useT();
  const kindLabel = useKindLabel();
  const { subject } = delivery;
  const label =
    delivery.kind === 'message.status'
      ? subject
        ? subject.phone
          ? t('deliveries.about.message', { phone: `+${subject.phone}` })
          : t('deliveries.about.messageForgotten')
        : t('deliveries.about.messageUnknown')
      : delivery.kind === 'client.check'
        ? t('deliveries.about.check')
        : delivery.kind === 'client.phone_changed'
          ? t('deliveries.about.phoneChange')
          : kindLabel(delivery.kind);
  return (
    <Stack gap={0} style={{ minWidth: 0 }}>
      <Anchor component={Link} to={`/messages/${delivery.subject_id}`} size="sm" data-testid="delivery-about">
        {label}
      </Anchor>
      <Text size="xs" c="dimmed" ff="monospace" style={{ overflowWrap: 'anywhere' }}>
        {delivery.subject_id}
      </Text>
    </Stack>
  );
}

/** A status tab's name and how many deliveries it holds ("10,000+" past the count's cap). */
export function TabLabel({
  label,
  count,
}: {
  label: string;
  count: { count: number; capped: boolean } | undefined;
}) {
  const t = useT();
  return (
    <Group gap={6} wrap="nowrap">
      <span>{label}</span>
      {count ? (
        <Badge variant="light" color="gray" size="sm" style={{ flexShrink: 0 }} data-testid="tab-count">
          {count.capped
            ? t('deliveries.countCapped', { count: count.count })
            : t('deliveries.count', { count: count.count })}
        </Badge>
      ) : null}
    </Group>
  );
}

/**
 * Each endpoint's health (or the one filtered to): on or off, success rate and attempts over 24 hours, and its
 * latest failure, as the endpoints page works them out; its name shows its deliveries here.
 */
export function EndpointHealthList({
  endpoints,
  selected,
  onSelect,
}: {
  endpoints: EndpointWithHealth[];
  selected: string;
  onSelect: (endpointId: string) => void;
}) {
  const t = useT();
  const shown = selected ? endpoints.filter((e) => e.id === selected) : endpoints;
  if (shown.length === 0) return null;
  return (
    <Stack gap="xs" component="section" aria-labelledby="endpoint-health-title">
      <Title order={2} size="h4" id="endpoint-health-title">
        {t('deliveries.health')}
      </Title>
      <SimpleGrid cols={{ base: 1, lg: shown.length > 1 ? 2 : 1 }} spacing="sm">
        {shown.map((e) => (
          <Card withBorder padding="sm" key={e.id} data-testid={`health-${e.id}`}>
            <Stack gap="xs">
              <Group justify="space-between" align="flex-start" wrap="nowrap">
                <Anchor
                  component="button"
                  type="button"
                  fw={600}
                  size="sm"
                  ta="left"
                  style={{ overflowWrap: 'anywhere', minWidth: 0 }}
                  onClick={() => onSelect(e.id)}
                  title={t('deliveries.healthOf')}
                  data-testid="health-endpoint-name"
                >
                  {endpointName(e)}
                </Anchor>
                <EndpointStateBadges endpoint={e} />
              </Group>
              <SimpleGrid cols={3} spacing="xs">
                <HealthFigures endpoint={e} />
              </SimpleGrid>
            </Stack>
          </Card>
        ))}
      </SimpleGrid>
    </Stack>
  );
}
