import { Anchor, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { Link } from 'react-router';
import { api } from '../api.js';
import { Disallowed, Loading, ProblemAlert, Time } from '../components/common.js';
import { PageButtons } from '../components/PageButtons.js';
import { endpointName } from '../components/EndpointCard.js';
import { en, type MessageKey } from '../i18n/en.js';
import { useT } from '../i18n/locale.js';
import { useCan } from '../session.js';
import type { EndpointList } from '../types.js';
import { useBotNames } from './Bots.js';

/** One entry of GET /api/audit. */
interface AuditEntry {
  id: string;
  at: string;
  action: string;
  actor: { member_id: string; email: string; name: string } | null;
  target: string;
  target_member: { member_id: string; email: string; name: string } | null;
  detail: unknown;
}

/** Actions whose target is a message or request: the target links to its timeline. */
const ABOUT_A_MESSAGE = new Set(['message.sent', 'client.change_phone', 'webhook.resent']);

const known = (key: string): MessageKey | undefined => (key in en ? (key as MessageKey) : undefined);

/** A value of a detail as text: lists joined, anything nested as JSON. */
const valueText = (v: unknown): string =>
  Array.isArray(v)
    ? v.map(valueText).join(', ')
    : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
      ? String(v)
      : JSON.stringify(v);

/**
 * A detail object as "key: value" pairs in the app's language (a role by its name); `by` is left out (the Who
 * column says it).
 */
function useDetailText() {
  const t = useT();
  return (detail: unknown): string => {
    if (detail === null || detail === undefined) return '';
    if (typeof detail !== 'object' || Array.isArray(detail)) return valueText(detail);
    return Object.entries(detail as Record<string, unknown>)
      .filter(([k, v]) => k !== 'by' && v !== undefined && v !== null && v !== '')
      .map(([k, v]) => {
        const name = known(`audit.detail.${k}`);
        const role = k === 'role' ? known(`role.${String(v)}`) : undefined;
        return `${name ? t(name) : k}: ${role ? t(role) : valueText(v)}`;
      })
      .join('; ');
  };
}

/** Who, what, to what and how, of one entry: the table's cells and the small screens' cards alike. */
function useEntryParts() {
  const t = useT();
  const botName = useBotNames();
  const detailText = useDetailText();
  const endpoints = useQuery({
    queryKey: ['endpoints'],
    queryFn: () => api<EndpointList>('GET', '/webhook/endpoints'),
  });
  const keys = useQuery({
    queryKey: ['keys'],
    queryFn: () => api<{ keys: { key_id: string; label: string; prefix: string }[] }>('GET', '/keys'),
  });
  return (e: AuditEntry): Record<'who' | 'what' | 'target' | 'details', ReactNode> => {
    const who = !e.actor
      ? t('audit.operator')
      : e.actor.email
        ? e.actor.name || e.actor.email
        : t('audit.formerMember');
    const label = known(`audit.action.${e.action}`);
    let target: ReactNode = e.target ? <code>{e.target}</code> : '—';
    if (e.target && ABOUT_A_MESSAGE.has(e.action)) {
      target = (
        <Anchor
          component={Link}
          to={`/messages/${e.target}`}
          aria-label={t('audit.openMessage', { id: e.target })}
          data-testid="audit-message-link"
          style={{ wordBreak: 'break-all' }}
        >
          <code>{e.target}</code>
        </Anchor>
      );
    } else if (e.action.startsWith('member.')) {
      target = e.target_member ? e.target_member.name || e.target_member.email : t('audit.formerMember');
    } else if (e.action.startsWith('bot.') && e.target) {
      target = botName(e.target);
    } else if (e.action.startsWith('webhook.endpoint_') && e.target) {
      const endpoint = endpoints.data?.endpoints.find((x) => x.id === e.target);
      if (endpoint) target = endpointName(endpoint);
    } else if (e.action.startsWith('api_key.') && e.target) {
      const key = keys.data?.keys.find((k) => k.key_id === e.target);
      target = key ? `${key.label} (${key.prefix}…)` : <code>{e.target}</code>;
    }
    return {
      who: (
        <Text size="sm" title={e.actor?.email} style={{ overflowWrap: 'anywhere' }}>
          {who}
        </Text>
      ),
      what: label ? t(label) : <code>{e.action}</code>,
      target,
      details: (
        <Text size="xs" c="dimmed" style={{ overflowWrap: 'anywhere' }}>
          {detailText(e.detail)}
        </Text>
      ),
    };
  };
}

/** What the company's members did here, newest first, for its owners. */
export function AuditPage() {
  const t = useT();
  const can = useCan();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const allowed = can('read-audit');
  const page = useQuery({
    queryKey: ['audit', cursor],
    queryFn: () =>
      api<{ entries: AuditEntry[]; next_cursor: string | null }>(
        'GET',
        `/audit?limit=50${cursor ? `&cursor=${cursor}` : ''}`,
      ),
    enabled: allowed,
    placeholderData: (previous) => previous,
  });
  const parts = useEntryParts();
  if (!allowed)
    return (
      <Stack>
        <Title order={1}>{t('audit.title')}</Title>
        <Disallowed />
      </Stack>
    );
  const entries = page.data?.entries ?? [];
  return (
    <Stack>
      <Title order={1}>{t('audit.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('audit.intro')}
      </Text>
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          {cursor ? t('audit.olderPage') : t('audit.newest')}
        </Text>
        <PageButtons
          cursors={cursors}
          setCursors={setCursors}
          next={page.data?.next_cursor}
          olderTestId="audit-older"
        />
      </Group>
      <ProblemAlert error={page.error} />
      {!page.data ? (
        <Loading />
      ) : entries.length === 0 ? (
        <Text data-testid="audit-none">{t('audit.none')}</Text>
      ) : (
        <>
          <Table striped visibleFrom="sm" data-testid="audit-table" layout="fixed">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w="18%">{t('audit.when')}</Table.Th>
                <Table.Th w="18%">{t('audit.who')}</Table.Th>
                <Table.Th w="22%">{t('audit.what')}</Table.Th>
                <Table.Th w="22%">{t('audit.target')}</Table.Th>
                <Table.Th>{t('audit.details')}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {entries.map((e) => {
                const p = parts(e);
                return (
                  <Table.Tr key={e.id} data-testid="audit-entry" data-action={e.action}>
                    <Table.Td>
                      <Time value={e.at} />
                    </Table.Td>
                    <Table.Td>{p.who}</Table.Td>
                    <Table.Td>{p.what}</Table.Td>
                    <Table.Td style={{ overflowWrap: 'anywhere' }}>{p.target}</Table.Td>
                    <Table.Td>{p.details}</Table.Td>
                  </Table.Tr>
                );
              })}
            </Table.Tbody>
          </Table>
          <Stack hiddenFrom="sm" gap="xs" data-testid="audit-cards">
            {entries.map((e) => {
              const p = parts(e);
              return (
                <Card key={e.id} withBorder padding="sm">
                  <Stack gap={4}>
                    <Group justify="space-between" gap="xs" wrap="wrap">
                      <Text size="sm" fw={600}>
                        {p.what}
                      </Text>
                      <Text size="xs" c="dimmed">
                        <Time value={e.at} />
                      </Text>
                    </Group>
                    {p.who}
                    <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
                      {p.target}
                    </Text>
                    {p.details}
                  </Stack>
                </Card>
              );
            })}
          </Stack>
        </>
      )}
    </Stack>
  );
}
