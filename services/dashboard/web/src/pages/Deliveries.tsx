import { Button, Card, Group, Select, SimpleGrid, Stack, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { useSearchParams } from 'react-router';
import { api, queryString } from '../api.js';
import { ConfirmButton, Loading, ProblemAlert } from '../components/common.js';
import { PageButtons } from '../components/PageButtons.js';
import { DateTimeField } from '../components/DateTimeField.js';
import {
  DELIVERY_KINDS,
  DeliveryList,
  EndpointHealthList,
  TabLabel,
  useKindLabel,
  type DeliveryView,
} from '../components/DeliveryParts.js';
import { endpointName } from '../components/EndpointCard.js';
import { FilterPanel } from '../components/FilterPanel.js';
import { useT } from '../i18n/locale.js';
import { useCan, useSession } from '../session.js';
import type { EndpointList } from '../types.js';

const STATUSES = ['all', 'failed', 'pending', 'delivered'] as const;
type Status = (typeof STATUSES)[number];
type Count = { count: number; capped: boolean };
const FILTERS = ['endpoint', 'kind', 'event_id'] as const;
type Filter = (typeof FILTERS)[number];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Webhook deliveries the way Svix shows them: every status at first, tabs with counts, search by type and id. */
export function DeliveriesPage() {
  const t = useT();
  const can = useCan();
  const session = useSession();
  const client = useQueryClient();
  const kindLabel = useKindLabel();
  // The tab and the filters live in the address: a link (the endpoints page's, a shared one) opens them as set.
  const [params, setParams] = useSearchParams();
  const status = (STATUSES as readonly string[]).includes(params.get('status') ?? '')
    ? (params.get('status') as Status)
    : 'all';
  const filter = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Record<Filter, string>;
  const [draft, setDraft] = useState(filter);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  useEffect(() => {
    setCursors([]);
    setDraft(Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Record<Filter, string>);
  }, [params]);
  const set = (values: Partial<Record<Filter | 'status', string>>) => {
    const next = new URLSearchParams(params);
    for (const [key, value] of Object.entries(values))
      if (value && !(key === 'status' && value === 'all')) next.set(key, value);
      else next.delete(key);
    setParams(next);
  };
  const eventIdInvalid = draft.event_id.trim() !== '' && !UUID.test(draft.event_id.trim());

  const endpoints = useQuery({
    queryKey: ['endpoints'],
    queryFn: () => api<EndpointList>('GET', '/webhook/endpoints'),
    refetchInterval: session.live_refresh_ms,
  });
  const nameOf = (id: string) => {
    const found = endpoints.data?.endpoints.find((e) => e.id === id);
    return found ? endpointName(found) : id;
  };
  const filters = { endpoint_id: filter.endpoint, kind: filter.kind, event_id: filter.event_id };
  const list = useQuery({
    queryKey: ['deliveries', status, filters, cursor],
    queryFn: () =>
      api<{ deliveries: DeliveryView[]; next_cursor: string | null }>(
        'GET',
        `/deliveries${queryString({ status, ...filters, cursor, limit: 25 })}`,
      ),
    refetchInterval: cursor ? false : session.live_refresh_ms,
    placeholderData: (previous) => previous,
  });
  const counts = useQuery({
    queryKey: ['deliveries', 'counts', filters],
    queryFn: () =>
      api<{ counts: Record<Exclude<Status, 'all'>, Count> }>(
        'GET',
        `/deliveries/counts${queryString(filters)}`,
      ),
    refetchInterval: session.live_refresh_ms,
  });
  const countOf = (s: Status): Count | undefined => {
    const c = counts.data?.counts;
    if (!c) return undefined;
    if (s !== 'all') return c[s];
    const parts = [c.failed, c.pending, c.delivered];
    return { count: parts.reduce((n, p) => n + p.count, 0), capped: parts.some((p) => p.capped) };
  };
  const resend = useMutation({
    mutationFn: (webhookId: string) => api('POST', `/deliveries/${webhookId}/resend`),
    onSuccess: () => client.invalidateQueries({ queryKey: ['deliveries'] }),
  });
  const activeFilters = FILTERS.filter((f) => filter[f]).length;
  const empty =
    activeFilters > 0
      ? t('deliveries.noneFiltered')
      : status === 'all'
        ? t('deliveries.noneAll')
        : t('deliveries.noneStatus', { status: t(`state.${status}`) });

  return (
    <Stack>
      <Title order={1}>{t('deliveries.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('deliveries.intro')}
      </Text>
      <FilterPanel
        label={t('deliveries.filters')}
        active={activeFilters}
        onSubmit={() => {
          if (!eventIdInvalid) set({ ...draft, event_id: draft.event_id.trim().toLowerCase() });
        }}
      >
        <Stack gap="sm">
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <Select
              label={t('deliveries.endpoint')}
              value={draft.endpoint}
              onChange={(v) => setDraft({ ...draft, endpoint: v ?? '' })}
              data={[
                { value: '', label: t('deliveries.allEndpoints') },
                ...(endpoints.data?.endpoints ?? []).map((e) => ({ value: e.id, label: endpointName(e) })),
                // An endpoint named by the address but not (or no longer) listed: its attempts are still shown.
                ...(filter.endpoint &&
                endpoints.data &&
                !endpoints.data.endpoints.some((e) => e.id === filter.endpoint)
                  ? [{ value: filter.endpoint, label: filter.endpoint }]
                  : []),
              ]}
              allowDeselect={false}
              data-testid="delivery-endpoint"
            />
            <Select
              label={t('deliveries.kind')}
              value={draft.kind}
              onChange={(v) => setDraft({ ...draft, kind: v ?? '' })}
              data={[
                { value: '', label: t('deliveries.kindAll') },
                ...DELIVERY_KINDS.map((k) => ({ value: k, label: kindLabel(k) })),
              ]}
              allowDeselect={false}
              data-testid="delivery-kind"
            />
            <TextInput
              label={t('deliveries.eventId')}
              description={t('deliveries.eventIdHint')}
              value={draft.event_id}
              onChange={(e) => setDraft({ ...draft, event_id: e.currentTarget.value })}
              error={eventIdInvalid ? t('deliveries.eventIdInvalid') : undefined}
              spellCheck={false}
              autoComplete="off"
              data-testid="delivery-event-id"
            />
          </SimpleGrid>
          <Group gap="sm">
            <Button type="submit" disabled={eventIdInvalid} data-testid="delivery-search">
              {t('deliveries.search')}
            </Button>
            <Button
              variant="default"
              disabled={activeFilters === 0}
              onClick={() => set({ endpoint: '', kind: '', event_id: '' })}
              data-testid="delivery-clear"
            >
              {t('deliveries.clear')}
            </Button>
          </Group>
        </Stack>
      </FilterPanel>
      <Tabs value={status} onChange={(v) => set({ status: v ?? 'all' })} keepMounted={false}>
        <Tabs.List aria-label={t('deliveries.tabsLabel')} data-testid="delivery-status">
          {STATUSES.map((s) => (
            <Tabs.Tab key={s} value={s} data-testid={`tab-${s}`}>
              <TabLabel label={t(`deliveries.tab.${s}`)} count={countOf(s)} />
            </Tabs.Tab>
          ))}
        </Tabs.List>
      </Tabs>
      <ProblemAlert error={list.error ?? counts.error ?? resend.error} />
      {!list.data ? (
        list.isPending ? (
          <Loading />
        ) : null
      ) : list.data.deliveries.length === 0 ? (
        <Text data-testid="no-deliveries">{empty}</Text>
      ) : (
        <DeliveryList
          deliveries={list.data.deliveries}
          nameOf={nameOf}
          resend={
            can('resend-webhooks')
              ? {
                  run: (id) => resend.mutate(id),
                  pending: resend.isPending ? resend.variables : undefined,
                }
              : undefined
          }
        />
      )}
      <Group justify="flex-end">
        <PageButtons cursors={cursors} setCursors={setCursors} next={list.data?.next_cursor} />
      </Group>
      {endpoints.data ? (
        <EndpointHealthList
          endpoints={endpoints.data.endpoints}
          selected={filter.endpoint}
          onSelect={(id) => set({ endpoint: id })}
        />
      ) : null}
      {can('resend-webhooks') ? <RecoverFailed endpoint={filter.endpoint} nameOf={nameOf} /> : null}
    </Stack>
  );
}

/** Sends every failed delivery since a time again (to one endpoint when the page is filtered to it). */
function RecoverFailed({ endpoint, nameOf }: { endpoint: string; nameOf: (id: string) => string }) {
  const t = useT();
  const client = useQueryClient();
  const [since, setSince] = useState(() => new Date(Date.now() - 86_400_000).toISOString());
  const [recovered, setRecovered] = useState<number | undefined>();
  return (
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
          disabled={!since}
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
  );
}
