import { Card, Group, Stack, Table, Text } from '@mantine/core';
import { useMediaQuery } from '@mantine/hooks';
import type { MouseEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useT } from '../i18n/locale.js';
import type { MessageRow } from '../types.js';
import { StateBadge } from './common.js';
import { ErrorSummary, messengerLabel } from './ErrorExplanation.js';

export type LogRow = MessageRow & { text_preview: string | null };

const pathOf = (row: LogRow) => `/messages/${row.message_id}`;

/** The beginning of a message's text, on at most two lines; said so when the dashboard has none to show. */
function TextPreview({ row }: { row: LogRow }) {
  const t = useT();
  return row.text_preview ? (
    <Text size="sm" lineClamp={2} style={{ overflowWrap: 'anywhere' }} data-testid="message-text">
      {row.text_preview}
    </Text>
  ) : (
    <Text size="sm" c="dimmed" fs="italic">
      {t('log.noText')}
    </Text>
  );
}

/** A message id, small, breaking anywhere (a uuid is one long word). */
function MessageId({ id }: { id: string }) {
  return (
    <Text size="xs" c="dimmed" ff="monospace" style={{ overflowWrap: 'anywhere' }} data-testid="message-id">
      {id}
    </Text>
  );
}

/**
 * The log's rows: a table on a wide screen, one card per message on a small one. The whole row (or card) opens
 * the message; the accepted time in it is the link keyboards and screen readers follow.
 */
export function MessageList({
  rows,
  fresh,
  botLabel,
}: {
  rows: LogRow[];
  fresh: Set<string>;
  botLabel: (row: LogRow) => string;
}) {
  const t = useT();
  const navigate = useNavigate();
  const small = useMediaQuery('(max-width: 48em)', false, { getInitialValueInEffect: false });
  // A click anywhere on the row opens it, except on the link itself (which opens it already, or in a new tab).
  const open = (row: LogRow) => (e: MouseEvent) => {
    if ((e.target as HTMLElement).closest('a')) return;
    if (e.metaKey || e.ctrlKey) window.open(pathOf(row), '_blank', 'noopener');
    else void navigate(pathOf(row));
  };
  const link = (row: LogRow) => <Link to={pathOf(row)}>{t.date(row.accepted_at ?? row.sort_at)}</Link>;

  if (small)
    return (
      <Stack gap="xs" data-testid="messages-table">
        {rows.map((m) => (
          <Card
            key={m.message_id}
            withBorder
            padding="sm"
            onClick={open(m)}
            style={{ cursor: 'pointer' }}
            bg={fresh.has(m.message_id) ? 'yellow.0' : undefined}
            data-testid={`message-${m.message_id}`}
          >
            <Stack gap={4}>
              <Group justify="space-between" wrap="nowrap" align="flex-start">
                <Text size="sm">{link(m)}</Text>
                <StateBadge state={m.state} />
              </Group>
              <TextPreview row={m} />
              <Text size="xs" c="dimmed">
                {[messengerLabel(m.messenger), botLabel(m), m.phone ?? '—'].join(' · ')}
              </Text>
              {m.error_code ? <ErrorSummary code={m.error_code} /> : null}
              <MessageId id={m.message_id} />
            </Stack>
          </Card>
        ))}
      </Stack>
    );

  return (
    <Table.ScrollContainer minWidth={1080}>
      <Table striped highlightOnHover data-testid="messages-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th style={{ minWidth: 130 }}>{t('messages.accepted')}</Table.Th>
            <Table.Th style={{ minWidth: 140 }}>{t('messages.state')}</Table.Th>
            <Table.Th style={{ minWidth: 200 }}>{t('log.text')}</Table.Th>
            <Table.Th>{t('messages.bot')}</Table.Th>
            <Table.Th>{t('messages.phone')}</Table.Th>
            <Table.Th style={{ minWidth: 170 }}>{t('messages.errorCode')}</Table.Th>
            <Table.Th>{t('messages.webhook')}</Table.Th>
            <Table.Th style={{ minWidth: 150 }}>{t('message.id')}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((m) => (
            <Table.Tr
              key={m.message_id}
              data-testid={`message-${m.message_id}`}
              onClick={open(m)}
              style={{ cursor: 'pointer' }}
              bg={fresh.has(m.message_id) ? 'yellow.0' : undefined}
            >
              <Table.Td>{link(m)}</Table.Td>
              <Table.Td>
                <StateBadge state={m.state} />
              </Table.Td>
              <Table.Td>
                <TextPreview row={m} />
              </Table.Td>
              <Table.Td>
                <Text size="sm">{botLabel(m)}</Text>
                <Text size="xs" c="dimmed" data-testid="message-messenger">
                  {messengerLabel(m.messenger)}
                </Text>
              </Table.Td>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{m.phone ?? '—'}</Table.Td>
              <Table.Td>{m.error_code ? <ErrorSummary code={m.error_code} /> : '—'}</Table.Td>
              <Table.Td>{m.webhook_status ? <StateBadge state={m.webhook_status} /> : '—'}</Table.Td>
              <Table.Td>
                <MessageId id={m.message_id} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
