import {
  Button,
  Card,
  Code,
  Group,
  SegmentedControl,
  Select,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, queryString } from '../api.js';
import { ConfirmButton, Loading, ProblemAlert, StateBadge, Time } from '../components/common.js';
import { DateTimeField } from '../components/DateTimeField.js';
import { useT } from '../i18n/locale.js';
import { useCan, useSession } from '../session.js';
import { endpointName } from '../components/EndpointCard.js';
import type { DeliveryRow, EndpointList } from '../types.js';

type Status = 'failed' | 'pending' | 'delivered';

export function DeliveriesPage() {
  const t = useT();
  const can = useCan();
  const session = useSession();
  const client = useQueryClient();
  const [status, setStatus] = useState<Status>('failed');
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  // The endpoint whose attempts are shown (the endpoints page links here with ?endpoint=); none: every one.
  const [params, setParams] = useSearchParams();
  const endpoint = params.get('endpoint') ?? '';
  const endpoints = useQuery({
    queryKey: ['endpoints'],
    queryFn: () => api<EndpointList>('GET', '/webhook/endpoints'),
  });
  const nameOf = (id: string) => {
    const found = endpoints.data?.endpoints.find((e) => e.id === id);
    return found ? endpointName(found) : id;
  };
  const list = useQuery({
    queryKey: ['deliveries', status, endpoint, cursor],
    queryFn: () =>
      api<{ deliveries: DeliveryRow[]; next_cursor: string | null }>(
        'GET',
        `/deliveries${queryString({ status, endpoint_id: endpoint, cursor, limit: 25 })}`,
      ),
    refetchInterval: cursor ? false : session.live_refresh_ms,
  });
  const resend = useMutation({
    mutationFn: (webhookId: string) => api('POST', `/deliveries/${webhookId}/resend`),
    onSuccess: () => client.invalidateQueries({ queryKey: ['deliveries'] }),
  });
  const [since, setSince] = useState(() => new Date(Date.now() - 86_400_000).toISOString());
  const [recovered, setRecovered] = useState<number | undefined>();

  return (
    <Stack>
      <Title order={1}>{t('deliveries.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('deliveries.intro')}
      </Text>
      {can('resend-webhooks') ? (
        <Card withBorder>
          <Group align="flex-end">
            <DateTimeField
              label={t('deliveries.since')}
              value={since}
              onChange={setSince}
              data-testid="recover-since"
            />
            <ConfirmButton
              label={t('deliveries.recover')}
              title={t('deliveries.recoverTitle')}
              body={
                <Text size="sm">
                  {endpoint
                    ? t('deliveries.recoverEndpointBody', {
                        since: t.date(new Date(since)),
                        endpoint: nameOf(endpoint),
                      })
                    : t('deliveries.recoverBody', { since: t.date(new Date(since)) })}
                </Text>
              }
              confirmLabel={t('deliveries.recoverConfirm')}
              color="indigo"
              variant="filled"
              testId="recover"
              onConfirm={async () => {
                const answer = await api<{ recovered: number }>('POST', '/deliveries/recover', {
                  since: new Date(since).toISOString(),
                  ...(endpoint ? { endpoint_id: endpoint } : {}),
                });
                setRecovered(answer.recovered);
                await client.invalidateQueries({ queryKey: ['deliveries'] });
              }}
            />
            {recovered !== undefined ? (
              <Text size="sm" data-testid="recovered">
                {t('deliveries.recovered', { count: recovered })}
              </Text>
            ) : null}
          </Group>
        </Card>
      ) : null}
      <Group align="flex-end">
        <Select
          label={t('deliveries.endpoint')}
          value={endpoint}
          onChange={(v) => {
            setParams(v ? { endpoint: v } : {});
            setCursors([]);
          }}
          data={[
            { value: '', label: t('deliveries.allEndpoints') },
            ...(endpoints.data?.endpoints ?? []).map((e) => ({ value: e.id, label: endpointName(e) })),
            // An endpoint named by the address but not (or no longer) listed: its attempts are still shown.
            ...(endpoint && endpoints.data && !endpoints.data.endpoints.some((e) => e.id === endpoint)
              ? [{ value: endpoint, label: endpoint }]
              : []),
          ]}
          allowDeselect={false}
          style={{ flex: '1 1 16rem', maxWidth: '28rem' }}
          data-testid="delivery-endpoint"
        />
        <SegmentedControl
          aria-label={t('deliveries.status')}
          value={status}
          onChange={(v) => {
            setStatus(v);
            setCursors([]);
          }}
          data={(['failed', 'pending', 'delivered'] as const).map((s) => ({
            value: s,
            label: t(`state.${s}`),
          }))}
          data-testid="delivery-status"
        />
      </Group>
      <ProblemAlert error={list.error ?? resend.error} />
      {!list.data ? (
        <Loading />
      ) : list.data.deliveries.length === 0 ? (
        <Text data-testid="no-deliveries">{t('deliveries.none')}</Text>
      ) : (
        <Table.ScrollContainer minWidth={1080}>
          <Table striped data-testid="deliveries-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t('deliveries.lastAttempt')}</Table.Th>
                <Table.Th>{t('deliveries.endpoint')}</Table.Th>
                <Table.Th>{t('deliveries.kind')}</Table.Th>
                <Table.Th>{t('deliveries.about')}</Table.Th>
                <Table.Th>{t('deliveries.attempts')}</Table.Th>
                <Table.Th>{t('deliveries.answer')}</Table.Th>
                <Table.Th>{t('deliveries.next')}</Table.Th>
                <Table.Th>{t('messages.state')}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data.deliveries.map((d) => (
                <Table.Tr key={d.webhook_id} data-testid={`delivery-${d.webhook_id}`}>
                  <Table.Td>
                    <Time value={d.last_attempt_at} />
                  </Table.Td>
                  <Table.Td style={{ maxWidth: '12rem', overflowWrap: 'anywhere' }}>
                    <Text
                      size="sm"
                      lineClamp={2}
                      title={nameOf(d.endpoint_id)}
                      data-testid="delivery-endpoint-name"
                    >
                      {nameOf(d.endpoint_id)}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Code>{d.kind}</Code>
                  </Table.Td>
                  <Table.Td>
                    <Link to={`/messages/${d.subject_id}`}>{d.subject_id.slice(0, 8)}…</Link>
                  </Table.Td>
                  <Table.Td>{d.attempts}</Table.Td>
                  <Table.Td>
                    <Text size="sm">{d.last_status_code ?? '—'}</Text>
                    {d.last_error ? (
                      <Text size="xs" c="dimmed" lineClamp={2}>
                        {d.last_error}
                      </Text>
                    ) : null}
                  </Table.Td>
                  <Table.Td>{d.next_attempt_at ? <Time value={d.next_attempt_at} /> : '—'}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap">
                      <StateBadge state={d.status} />
                      {can('resend-webhooks') ? (
                        <Button
                          size="compact-sm"
                          variant="light"
                          onClick={() => resend.mutate(d.webhook_id)}
                          loading={resend.isPending && resend.variables === d.webhook_id}
                          data-testid={`resend-${d.webhook_id}`}
                        >
                          {t('deliveries.resend')}
                        </Button>
                      ) : null}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Group justify="flex-end">
        <Button
          variant="default"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          {t('messages.newer')}
        </Button>
        <Button
          variant="default"
          disabled={!list.data?.next_cursor}
          onClick={() => list.data?.next_cursor && setCursors([...cursors, list.data.next_cursor])}
        >
          {t('messages.older')}
        </Button>
      </Group>
    </Stack>
  );
}
