import { Button, Group, Select, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageErrorCodes } from '@mds/contracts/error-codes';
import { useEffect, useRef, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, queryString } from '../api.js';
import { Loading, ProblemAlert } from '../components/common.js';
import { PageButtons } from '../components/PageButtons.js';
import { DateTimeField } from '../components/DateTimeField.js';
import { messengerLabel, useExplainError } from '../components/ErrorExplanation.js';
import { FilterPanel } from '../components/FilterPanel.js';
import { MessageList, type LogRow } from '../components/MessageList.js';
import { useLocale, useT } from '../i18n/locale.js';
import { messengerChoices } from '../messengers.js';
import { useSession } from '../session.js';
import { useBotNames, useBots } from './Bots.js';

const FILTERS = [
  'event_id',
  'text',
  'state',
  'error_code',
  'service',
  'bot_id',
  'phone',
  'from',
  'to',
] as const;
type Filter = (typeof FILTERS)[number];
/** The form's fields: one box takes words of the text or a message id (told apart when applied). */
type Draft = Record<Exclude<Filter, 'event_id' | 'text'> | 'find', string>;
const MESSAGE_ID = /^\s*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\s*$/i;
/** What the server says of its limits (services/dashboard/src: TEXT_SEARCH_WINDOW, EXPORT_ROW_LIMIT). */
const EXPORT_ROW_LIMIT = 100_000;

interface LogPage {
  messages: LogRow[];
  next_cursor: string | null;
  text_search?: { window: number; searched_back_to: string | null };
}

const draftOf = (filter: Record<Filter, string>): Draft => {
  const { event_id, text, ...rest } = filter;
  return { ...rest, find: event_id || text };
};

export function MessagesPage() {
  const t = useT();
  const { locale } = useLocale();
  const explain = useExplainError();
  const session = useSession();
  const [params, setParams] = useSearchParams();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const bots = useBots();
  const botName = useBotNames();
  const filter = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Record<Filter, string>;
  const [draft, setDraft] = useState(draftOf(filter));
  useEffect(() => setCursors([]), [params]);

  const page = useQuery({
    queryKey: ['messages', filter, cursor],
    queryFn: () => api<LogPage>('GET', `/messages${queryString({ ...filter, cursor, limit: 25 })}`),
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

  const apply = ({ find, ...values }: Draft) => {
    const next = new URLSearchParams();
    const byId = MESSAGE_ID.test(find);
    const all: Record<Filter, string> = {
      ...values,
      event_id: byId ? find.trim().toLowerCase() : '',
      text: byId ? '' : find.trim(),
    };
    for (const f of FILTERS) if (all[f]) next.set(f, all[f]);
    setParams(next);
  };
  const textSearch = page.data?.text_search;

  return (
    <Stack>
      <Title order={1}>{t('messages.title')}</Title>
      <FilterPanel
        label={t('messages.search')}
        active={FILTERS.filter((f) => filter[f]).length}
        onSubmit={() => apply(draft)}
      >
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 4 }}>
          <TextInput
            label={t('log.find')}
            description={t('log.findHint')}
            value={draft.find}
            onChange={(e) => setDraft({ ...draft, find: e.currentTarget.value })}
            maxLength={200}
            data-testid="filter-find"
          />
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
            data={Object.keys(messageErrorCodes).map((code) => ({
              value: code,
              label: `${explain(code)?.title ?? code} (${code})`,
            }))}
            data-testid="filter-error-code"
          />
          <Select
            label={t('messages.service')}
            clearable
            value={draft.service || null}
            onChange={(v) => setDraft({ ...draft, service: v ?? '' })}
            data={messengerChoices()}
          />
          <Select
            label={t('messages.bot')}
            clearable
            value={draft.bot_id || null}
            onChange={(v) => setDraft({ ...draft, bot_id: v ?? '' })}
            data={(bots.data?.bots ?? []).map((b) => ({
              value: b.bot_id,
              label: `${b.name} (${messengerLabel(b.messenger)})`,
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
                const empty = draftOf(
                  Object.fromEntries(FILTERS.map((f) => [f, ''])) as Record<Filter, string>,
                );
                setDraft(empty);
                apply(empty);
              }}
            >
              {t('messages.clear')}
            </Button>
          </Group>
        </SimpleGrid>
      </FilterPanel>
      {filter.text ? (
        <Text size="sm" c="dimmed" data-testid="text-window">
          {t('log.textWindow', { window: textSearch?.window ?? 10_000 })}
          {textSearch?.searched_back_to
            ? ` ${t('log.searchedBackTo', { at: t.date(textSearch.searched_back_to), window: textSearch.window })}`
            : ''}
        </Text>
      ) : null}
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          {cursor ? t('messages.olderPage') : t('messages.live')}
        </Text>
        <Group>
          <Button
            component="a"
            variant="default"
            href={`/api/messages.csv${queryString({ ...filter, lang: locale })}`}
            download
            data-testid="export-csv"
          >
            {t('log.export')}
          </Button>
          <PageButtons
            cursors={cursors}
            setCursors={setCursors}
            next={page.data?.next_cursor}
            olderTestId="older"
          />
        </Group>
      </Group>
      <ProblemAlert error={page.error} />
      {!page.data ? (
        <Loading />
      ) : page.data.messages.length === 0 ? (
        <Stack gap={4}>
          <Text data-testid="no-messages">{filter.event_id ? t('log.noneById') : t('messages.none')}</Text>
          {filter.event_id ? <Link to={`/messages/${filter.event_id}`}>{t('log.openTimeline')}</Link> : null}
        </Stack>
      ) : (
        <MessageList
          rows={page.data.messages}
          fresh={fresh}
          botLabel={(m) => (m.bot_id ? botName(m.bot_id) : (m.bot_name ?? t('messages.defaultBot')))}
        />
      )}
      <Text size="xs" c="dimmed" data-testid="export-hint">
        {t('log.exportHint', { limit: EXPORT_ROW_LIMIT })}
      </Text>
    </Stack>
  );
}
