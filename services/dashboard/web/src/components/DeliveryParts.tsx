import { Anchor, Badge, Button, Card, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useMediaQuery } from '@mantine/hooks';
import { Link } from 'react-router';
import { useT } from '../i18n/locale.js';
import type { MessageKey } from '../i18n/en.js';
import type { DeliveryRow, EndpointWithHealth } from '../types.js';
import { StateBadge, Time } from './common.js';
import { endpointName } from './EndpointCard.js';
import { EndpointStateBadges, Figure, HealthFigures } from './EndpointHealth.js';

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
          {`${t.number(count.count)}${count.capped ? '+' : ''}`}
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

interface ListProps {
  deliveries: DeliveryView[];
  nameOf: (endpointId: string) => string;
  /** Resending, for a role allowed to: the delivery being resent now, if any. */
  resend: { run: (webhookId: string) => void; pending: string | undefined } | undefined;
}

/** The HTTP answer of a delivery's latest attempt, and its error when that says more than the status. */
function Answer({ d }: { d: DeliveryView }) {
  return (
    <>
      <Text size="sm">{d.last_status_code ?? '—'}</Text>
      {d.last_error && d.last_error !== `HTTP ${d.last_status_code}` ? (
        <Text size="xs" c="dimmed" style={{ overflowWrap: 'anywhere' }}>
          {d.last_error}
        </Text>
      ) : null}
    </>
  );
}

function ResendButton({ d, resend }: { d: DeliveryView; resend: NonNullable<ListProps['resend']> }) {
  const t = useT();
  return (
    <Button
      size="compact-sm"
      variant="light"
      onClick={() => resend.run(d.webhook_id)}
      loading={resend.pending === d.webhook_id}
      data-testid={`resend-${d.webhook_id}`}
    >
      {t('deliveries.resend')}
    </Button>
  );
}

/**
 * A page of deliveries: a table on a wide screen; on a phone (under Mantine's `sm`) one card each, so that
 * nothing of a delivery is off the screen's edge.
 */
export function DeliveryList(props: ListProps) {
  const small = useMediaQuery('(max-width: 48em)', false, { getInitialValueInEffect: false });
  return small ? <DeliveryCards {...props} /> : <DeliveryTable {...props} />;
}

function DeliveryCards({ deliveries, nameOf, resend }: ListProps) {
  const t = useT();
  const kindLabel = useKindLabel();
  return (
    <Stack gap="sm" data-testid="deliveries-table">
      {deliveries.map((d) => (
        <Card withBorder padding="sm" key={d.webhook_id} data-testid={`delivery-${d.webhook_id}`}>
          <Stack gap="xs">
            <Group justify="space-between" align="flex-start" wrap="nowrap">
              <DeliveryAbout delivery={d} />
              <StateBadge state={d.status} testId="delivery-state" />
            </Group>
            <SimpleGrid cols={2} spacing="xs">
              <Figure label={t('deliveries.kind')}>{kindLabel(d.kind)}</Figure>
              <Figure label={t('deliveries.endpoint')}>{nameOf(d.endpoint_id)}</Figure>
              <Figure label={t('deliveries.lastAttempt')}>
                <Time value={d.last_attempt_at} />
              </Figure>
              <Figure label={t('deliveries.attempts')}>{t.number(d.attempts)}</Figure>
              <Stack gap={2} style={{ minWidth: 0 }}>
                <Text size="xs" c="dimmed">
                  {t('deliveries.answer')}
                </Text>
                <Answer d={d} />
              </Stack>
              <Figure label={t('deliveries.next')}>
                {d.next_attempt_at ? <Time value={d.next_attempt_at} /> : '—'}
              </Figure>
            </SimpleGrid>
            {resend ? (
              <Group>
                <ResendButton d={d} resend={resend} />
              </Group>
            ) : null}
          </Stack>
        </Card>
      ))}
    </Stack>
  );
}

function DeliveryTable({ deliveries, nameOf, resend }: ListProps) {
  const t = useT();
  const kindLabel = useKindLabel();
  return (
    <Table.ScrollContainer minWidth={1040}>
      <Table striped data-testid="deliveries-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t('deliveries.lastAttempt')}</Table.Th>
            <Table.Th>{t('deliveries.about')}</Table.Th>
            <Table.Th>{t('deliveries.kind')}</Table.Th>
            <Table.Th>{t('deliveries.endpoint')}</Table.Th>
            <Table.Th>{t('deliveries.attempts')}</Table.Th>
            <Table.Th>{t('deliveries.answer')}</Table.Th>
            <Table.Th>{t('deliveries.next')}</Table.Th>
            <Table.Th>{t('messages.state')}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {deliveries.map((d) => (
            <Table.Tr key={d.webhook_id} data-testid={`delivery-${d.webhook_id}`}>
              <Table.Td>
                <Time value={d.last_attempt_at} />
              </Table.Td>
              <Table.Td style={{ maxWidth: '16rem' }}>
                <DeliveryAbout delivery={d} />
              </Table.Td>
              <Table.Td>
                <Text size="sm" title={d.kind} data-testid="delivery-kind-label">
                  {kindLabel(d.kind)}
                </Text>
              </Table.Td>
              <Table.Td style={{ maxWidth: '12rem', overflowWrap: 'anywhere' }}>
                <Text size="sm" data-testid="delivery-endpoint-name">
                  {nameOf(d.endpoint_id)}
                </Text>
              </Table.Td>
              <Table.Td>{t.number(d.attempts)}</Table.Td>
              <Table.Td style={{ maxWidth: '14rem' }}>
                <Answer d={d} />
              </Table.Td>
              <Table.Td>{d.next_attempt_at ? <Time value={d.next_attempt_at} /> : '—'}</Table.Td>
              <Table.Td>
                <Group gap="xs">
                  <StateBadge state={d.status} testId="delivery-state" />
                  {resend ? <ResendButton d={d} resend={resend} /> : null}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
