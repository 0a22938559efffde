import { Anchor, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, ApiError } from '../api.js';
import { Loading, ProblemAlert, Time } from '../components/common.js';
import { useKeyName } from '../components/KeyActions.js';
import { useT } from '../i18n/locale.js';
import type { ApiRequestView } from '../types.js';

interface RequestsPage {
  key: { key_id: string; prefix: string; label: string; revoked_at: string | null };
  requests: ApiRequestView[];
  next_cursor: string | null;
  retention_days: number;
}

const OPERATIONS = ['send', 'send_batch', 'cancel', 'change_phone', 'client_check', 'read_event'] as const;

/** 2xx teal, 4xx orange (the caller's to fix), 5xx red (ours). */
const statusColor = (status: number) => (status < 300 ? 'teal' : status < 500 ? 'orange' : 'red');

/** One key's request log: every request it made, newest first, page after page. */
export function KeyRequestsPage() {
  const t = useT();
  const name = useKeyName();
  const { keyId = '' } = useParams();
  const log = useInfiniteQuery({
    queryKey: ['key-requests', keyId],
    initialPageParam: '',
    queryFn: ({ pageParam }) =>
      api<RequestsPage>(
        'GET',
        `/keys/${encodeURIComponent(keyId)}/requests${pageParam ? `?cursor=${encodeURIComponent(pageParam)}` : ''}`,
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    retry: (count, error) => !(error instanceof ApiError && error.status === 404) && count < 2,
  });
  const first = log.data?.pages[0];
  const rows = log.data?.pages.flatMap((p) => p.requests) ?? [];
  const operation = (op: string) =>
    (OPERATIONS as readonly string[]).includes(op)
      ? t(`requests.op.${op as (typeof OPERATIONS)[number]}`)
      : op;
  return (
    <Stack>
      <Anchor component={Link} to="/keys" size="sm">
        ← {t('requests.back')}
      </Anchor>
      <Title order={1}>{first ? t('keys.requestsOf', { label: name(first.key) }) : t('keys.requests')}</Title>
      {log.error instanceof ApiError && log.error.status === 404 ? (
        <Text>{t('requests.notFound')}</Text>
      ) : (
        <ProblemAlert error={log.error} />
      )}
      {!first ? (
        log.error ? null : (
          <Loading />
        )
      ) : (
        <>
          <Text size="sm" c="dimmed">
            {first.key.prefix}… · {t('requests.intro', { days: first.retention_days })}
          </Text>
          {rows.length === 0 ? (
            <Text data-testid="no-requests">{t('requests.none', { days: first.retention_days })}</Text>
          ) : (
            <Table.ScrollContainer
              minWidth={760}
              // Scrolled sideways on a phone: by keyboard too (the rows may hold nothing else to focus).
              scrollAreaProps={{ viewportProps: { tabIndex: 0, 'aria-label': t('keys.requests') } }}
            >
              <Table striped data-testid="requests-table">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>{t('requests.at')}</Table.Th>
                    <Table.Th>{t('requests.operation')}</Table.Th>
                    <Table.Th>{t('requests.status')}</Table.Th>
                    <Table.Th>{t('requests.eventId')}</Table.Th>
                    <Table.Th>{t('requests.requestId')}</Table.Th>
                    <Table.Th>{t('requests.duration')}</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {rows.map((r) => (
                    <Table.Tr key={`${r.at}-${r.request_id}`} data-testid="request-row">
                      <Table.Td>
                        <Time value={r.at} />
                      </Table.Td>
                      <Table.Td>{operation(r.operation)}</Table.Td>
                      <Table.Td>
                        <Badge color={statusColor(r.status)} variant="light" data-testid="request-status">
                          {r.status}
                        </Badge>
                      </Table.Td>
                      <Table.Td>
                        {/* An id the key read and was told is none of its company's (404) leads nowhere. */}
                        {r.event_id && r.status < 400 ? (
                          <Anchor component={Link} to={`/messages/${r.event_id}`} size="sm" ff="monospace">
                            {r.event_id}
                          </Anchor>
                        ) : (
                          <Text size="sm" ff="monospace">
                            {r.event_id ?? '—'}
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <Text size="xs" ff="monospace">
                          {r.request_id}
                        </Text>
                      </Table.Td>
                      <Table.Td>{t('requests.ms', { ms: r.duration_ms })}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )}
          {log.hasNextPage ? (
            <Group justify="center">
              <Button
                variant="default"
                loading={log.isFetchingNextPage}
                onClick={() => void log.fetchNextPage()}
                data-testid="older-requests"
              >
                {t('requests.more')}
              </Button>
            </Group>
          ) : null}
        </>
      )}
    </Stack>
  );
}
