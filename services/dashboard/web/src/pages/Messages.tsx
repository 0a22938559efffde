import {
  Badge,
  Button,
  Group,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageErrorCodes } from '@mds/contracts/error-codes';
import { useEffect, useRef, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, queryString } from '../api.js';
import { Loading, ProblemAlert, StateBadge } from '../components/common.js';
import { DateTimeField } from '../components/DateTimeField.js';
import { FilterPanel } from '../components/FilterPanel.js';
import { useT } from '../i18n/locale.js';
import { useSession } from '../session.js';
import type { MessageRow } from '../types.js';
import { useBotNames, useBots } from './Bots.js';

const FILTERS = ['state', 'error_code', 'service', 'bot_id', 'phone', 'from', 'to'] as const;
type Filter = (typeof FILTERS)[number];

export function MessagesPage() {
  const t = useT();
  const session = useSession();
  const [params, setParams] = useSearchParams();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const bots = useBots();
  const botName = useBotNames();
  const filter = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Record<Filter, string>;
  const [draft, setDraft] = useState(filter);
  useEffect(() => setCursors([]), [params]);

  const page = useQuery({
    queryKey: ['messages', filter, cursor],
    queryFn: () =>
      api<{ messages: MessageRow[]; next_cursor: string | null }>(
        'GET',
        `/messages${queryString({ ...filter, cursor, limit: 25 })}`,
      ),
    // The first page follows the log: new messages appear at the top as they are accepted.
    refetchInterval: cursor ? false : session.live_refresh_ms,
    placeholderData: (previous) => previous,
  });

  // Rows that appeared since the page was first shown are marked for a moment.
  const seen = useRef(new Set<string>());
  const [fresh, setFresh] = useState(new Set<string>());
  useEffect(() => {
    const rows = page.data?.messages ?? [];
    if (seen.current.size > 0 && !cursor)
      setFresh(new Set(rows.filter((r) => !seen.current.has(r.message_id)).map((r) => r.message_id)));
    for (const r of rows) seen.current.add(r.message_id);
  }, [page.data, cursor]);

  const apply = (values: Record<Filter, string>) => {
    const next = new URLSearchParams();
    for (const f of FILTERS) if (values[f]) next.set(f, values[f]);
    setParams(next);
  };

  return (
    <Stack>
      <Title order={1}>{t('messages.title')}</Title>
      <FilterPanel
        label={t('messages.search')}
        active={FILTERS.filter((f) => filter[f]).length}
        onSubmit={() => apply(draft)}
      >
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 4 }}>
          <Select
            label={t('messages.state')}
            clearable
            value={draft.state || null}
            onChange={(v) => setDraft({ ...draft, state: v ?? '' })}
            data={(['new', 'sent', 'failed'] as const).map((s) => ({ value: s, label: t(`state.${s}`) }))}
            data-testid="filter-state"
          />
          <Select
            label={t('messages.errorCode')}
            clearable
            searchable
            value={draft.error_code || null}
            onChange={(v) => setDraft({ ...draft, error_code: v ?? '' })}
            data={Object.keys(messageErrorCodes)}
          />
          <Select
            label={t('messages.service')}
            clearable
            value={draft.service || null}
            onChange={(v) => setDraft({ ...draft, service: v ?? '' })}
            data={[
              { value: 'telegram', label: 'Telegram' },
              { value: 'max', label: 'MAX' },
            ]}
          />
          <Select
            label={t('messages.bot')}
            clearable
            value={draft.bot_id || null}
            onChange={(v) => setDraft({ ...draft, bot_id: v ?? '' })}
            data={(bots.data?.bots ?? []).map((b) => ({
              value: b.bot_id,
              label: `${b.name} (${b.messenger})`,
            }))}
          />
          <TextInput
            label={t('messages.phone')}
            description={t('messages.phoneHint')}
            inputMode="tel"
            value={draft.phone}
            onChange={(e) => setDraft({ ...draft, phone: e.currentTarget.value })}
            data-testid="filter-phone"
          />
          <DateTimeField
            label={t('messages.from')}
            value={draft.from}
            onChange={(from) => setDraft({ ...draft, from })}
          />
          <DateTimeField
            label={t('messages.to')}
            value={draft.to}
            onChange={(to) => setDraft({ ...draft, to })}
          />
          <Group align="flex-end">
            <Button type="submit" data-testid="apply-filters">
              {t('messages.apply')}
            </Button>
            <Button
              variant="default"
              onClick={() => {
                const empty = Object.fromEntries(FILTERS.map((f) => [f, ''])) as Record<Filter, string>;
                setDraft(empty);
                apply(empty);
              }}
            >
              {t('messages.clear')}
            </Button>
          </Group>
        </SimpleGrid>
      </FilterPanel>
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          {cursor ? t('messages.olderPage') : t('messages.live')}
        </Text>
        <Group>
          <Button
            variant="default"
            disabled={cursors.length === 0}
            onClick={() => setCursors(cursors.slice(0, -1))}
          >
            {t('messages.newer')}
          </Button>
          <Button
            variant="default"
            disabled={!page.data?.next_cursor}
            onClick={() => page.data?.next_cursor && setCursors([...cursors, page.data.next_cursor])}
            data-testid="older"
          >
            {t('messages.older')}
          </Button>
        </Group>
      </Group>
      <ProblemAlert error={page.error} />
      {!page.data ? (
        <Loading />
      ) : page.data.messages.length === 0 ? (
        <Text data-testid="no-messages">{t('messages.none')}</Text>
      ) : (
        <Table.ScrollContainer minWidth={900}>
          <Table striped highlightOnHover data-testid="messages-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t('messages.accepted')}</Table.Th>
                <Table.Th>{t('messages.state')}</Table.Th>
                <Table.Th>{t('messages.service')}</Table.Th>
                <Table.Th>{t('messages.bot')}</Table.Th>
                <Table.Th>{t('messages.phone')}</Table.Th>
                <Table.Th>{t('messages.errorCode')}</Table.Th>
                <Table.Th>{t('messages.webhook')}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {page.data.messages.map((m) => (
                <Table.Tr
                  key={m.message_id}
                  data-testid={`message-${m.message_id}`}
                  bg={fresh.has(m.message_id) ? 'yellow.0' : undefined}
                >
                  <Table.Td>
                    <Link to={`/messages/${m.message_id}`}>{t.date(m.accepted_at ?? m.sort_at)}</Link>
                  </Table.Td>
                  <Table.Td>
                    <StateBadge state={m.state} />
                  </Table.Td>
                  <Table.Td>{m.messenger ?? '—'}</Table.Td>
                  <Table.Td>
                    {m.bot_id ? botName(m.bot_id) : (m.bot_name ?? t('messages.defaultBot'))}
                  </Table.Td>
                  <Table.Td>{m.phone ?? '—'}</Table.Td>
                  <Table.Td>
                    {m.error_code ? (
                      <Badge color="red" variant="outline">
                        {m.error_code}
                      </Badge>
                    ) : (
                      '—'
                    )}
                  </Table.Td>
                  <Table.Td>{m.webhook_status ? <StateBadge state={m.webhook_status} /> : '—'}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
