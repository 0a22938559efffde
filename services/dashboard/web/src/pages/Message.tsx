import { Badge, Button, Card, Code, Group, SimpleGrid, Stack, Text, Timeline, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef } from 'react';
import { Link, useLocation, useParams } from 'react-router';
import { api, ApiError } from '../api.js';
import { AcceptedFrom } from '../components/AcceptedFrom.js';
import { Loading, ProblemAlert, StateBadge, Time } from '../components/common.js';
import { ErrorDetails, messengerLabel } from '../components/ErrorExplanation.js';
import { en, type MessageKey } from '../i18n/en.js';
import { useT, type Translate } from '../i18n/locale.js';
import { useCan, useSession } from '../session.js';
import type { MessageRow, TimelineEntry } from '../types.js';
import { useBotNames } from './Bots.js';

const COLORS: Record<string, string> = {
  MessageAccepted: 'blue',
  DeliveryRequested: 'indigo',
  MessageSent: 'teal',
  MessageDeliveryFailed: 'red',
  MessageAttemptFailed: 'orange',
  WebhookDelivered: 'teal',
  WebhookDeliveryAbandoned: 'red',
};

const OUTCOME_KEYS: Record<string, MessageKey> = {
  succeeded: 'webhook.outcome.succeeded',
  retryable: 'webhook.outcome.retryable',
  gone: 'webhook.outcome.gone',
  gave_up: 'webhook.outcome.gave_up',
};

const str = (v: unknown): string =>
  v === null || v === undefined || v === ''
    ? '—'
    : typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : JSON.stringify(v);

/** A moment of the message's request, when it has it: its expiry (ttl_seconds), its time (send_at). */
const MOMENTS = {
  expires_at: { key: 'timeline.expiresAt', testId: 'expires-at' },
  send_at: { key: 'timeline.sendAt', testId: 'send-at' },
} as const;
function Moment({
  data,
  field,
  t,
}: {
  data: TimelineEntry['data'];
  field: keyof typeof MOMENTS;
  t: Translate;
}) {
  if (!data[field]) return null;
  return (
    <Text size="xs" data-testid={MOMENTS[field].testId}>
      {t(MOMENTS[field].key, { at: t.date(str(data[field])) })}
    </Text>
  );
}
const ExpiresAt = (o: { data: TimelineEntry['data']; t: Translate }) => <Moment {...o} field="expires_at" />;
const SendAt = (o: { data: TimelineEntry['data']; t: Translate }) => <Moment {...o} field="send_at" />;

/** A failure's description, when it has one. */
function Details({ data, t }: { data: TimelineEntry['data']; t: Translate }) {
  if (!data.error_description) return null;
  return (
    <Text size="xs" c="dimmed">
      {t('log.error.messenger', { description: str(data.error_description) })}
    </Text>
  );
}

/** A channel of a send (its own or a fallback's), as the timeline names it: "MAX (shop_max_bot)". */
const channelName = (c: unknown): string => {
  const { service, bot_name } = (c ?? {}) as { service?: string; bot_name?: string };
  const label = messengerLabel(service);
  return bot_name ? `${label} (${bot_name})` : label;
};

/**
 * Where a message with a fallback is among its channels, from its timeline: the next one after each that could
 * not reach the person, then the one that decided it. Undefined for a message without a fallback.
 */
function currentChannel(timeline: TimelineEntry[]): unknown {
  let current: unknown;
  for (const e of timeline)
    if (e.type === 'MessageAttemptFailed') current = e.data.next;
    else if ((e.type === 'MessageSent' || e.type === 'MessageDeliveryFailed') && e.data.fallback)
      current = e.data.fallback;
  return current;
}

/** The channel that decided a message with a fallback, and how many could not reach the person before it. */
function DecidedOn({ data, t }: { data: TimelineEntry['data']; t: Translate }) {
  const fallback = data.fallback as { attempts: unknown[] } | undefined;
  if (!fallback) return null;
  return (
    <Text size="sm" data-testid="decided-on">
      {t('timeline.decidedOn', { channel: channelName(fallback), tried: fallback.attempts.length })}
    </Text>
  );
}

/** A failed message that expired, or was canceled, is titled so: its cause, not only its end. */
const FAILED_TITLES = { EXPIRED: 'timeline.expired', CANCELED: 'timeline.canceled' } as const;
const failedTitle = (entry: TimelineEntry) =>
  entry.type === 'MessageDeliveryFailed'
    ? FAILED_TITLES[str(entry.data.error_code) as keyof typeof FAILED_TITLES]
    : undefined;

/** What one event of the timeline says, in words, with its details. */
function EntryBody({
  entry,
  t,
  previous,
  botName,
}: {
  entry: TimelineEntry;
  t: Translate;
  previous?: TimelineEntry;
  botName: (id: string) => string;
}) {
  const d = entry.data;
  const since = previous ? new Date(entry.at).getTime() - new Date(previous.at).getTime() : null;
  switch (entry.type) {
    case 'MessageAccepted':
      return (
        <Stack gap={4}>
          <AcceptedFrom keyId={str(d.api_key_id)} />
          <Code
            block
            tabIndex={0}
            data-testid="request-body"
            style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}
          >
            {JSON.stringify(
              {
                phone_number: d.phone_number,
                service: d.service,
                ...(d.bot_name ? { bot_name: d.bot_name } : {}),
                text: d.text,
                ...((d.buttons as unknown[]).length ? { buttons: d.buttons } : {}),
                ...(d.metadata ? { metadata: d.metadata } : {}),
                ...(d.send_at ? { send_at: d.send_at } : {}),
                ...(d.fallback ? { fallback: d.fallback } : {}),
              },
              null,
              2,
            )}
          </Code>
          {d.idempotency_key ? <Text size="xs">Idempotency-Key: {str(d.idempotency_key)}</Text> : null}
          <SendAt data={d} t={t} />
          <ExpiresAt data={d} t={t} />
        </Stack>
      );
    case 'DeliveryRequested':
      return (
        <Stack gap={4}>
          <Text size="sm">
            {t('timeline.routedBody', {
              bot: d.bot_id ? botName(str(d.bot_id)) : str(d.bot_name),
              chat: str(d.chat_id),
              deadline: t.date(str(d.deliver_before)),
            })}
          </Text>
          <SendAt data={d} t={t} />
          <ExpiresAt data={d} t={t} />
        </Stack>
      );
    case 'MessageCancelRequested':
      return <Text size="sm">{t('timeline.cancelBody')}</Text>;
    case 'MessageAttemptFailed':
      return (
        <Stack gap={4}>
          <Text size="sm" data-testid="attempt-failed">
            {t('timeline.attemptFailedBody', {
              channel: channelName(d),
              code: str(d.error_code),
              next: channelName(d.next),
            })}
          </Text>
          <Details data={d} t={t} />
        </Stack>
      );
    case 'MessageSent':
      return (
        <Stack gap={4}>
          <Text size="sm">
            {t('timeline.sentBody', {
              attempts: Number(d.attempts),
              id: str(d.provider_message_id),
              after: t.ms(since),
            })}
          </Text>
          <DecidedOn data={d} t={t} />
        </Stack>
      );
    case 'MessageDeliveryFailed':
      return (
        <Stack gap={4}>
          <DecidedOn data={d} t={t} />
          <ErrorDetails code={str(d.error_code)} testId="failure-explained" />
          <Text size="sm">{t('timeline.failedBody', { attempts: Number(d.attempts) })}</Text>
          <Details data={d} t={t} />
        </Stack>
      );
    case 'PhoneChangeRejected':
      return <ErrorDetails code={str(d.error_code)} testId="failure-explained" />;
    case 'WebhookAttempted':
      return (
        <Stack gap={2}>
          <Group gap="xs">
            <Badge color={d.outcome === 'succeeded' ? 'teal' : d.outcome === 'retryable' ? 'yellow' : 'red'}>
              {t(OUTCOME_KEYS[str(d.outcome)] ?? 'webhook.outcome.failed')}
            </Badge>
            <Text size="sm">
              {t('timeline.attemptBody', {
                attempt: Number(d.attempt),
                status: str(d.status_code),
                latency: t.ms(Number(d.latency_ms)),
              })}
            </Text>
          </Group>
          <Text size="xs" c="dimmed">
            {str(d.url)}
          </Text>
          {d.error ? <Text size="sm">{str(d.error)}</Text> : null}
          {d.response_excerpt ? (
            <Code block tabIndex={0}>
              {str(d.response_excerpt)}
            </Code>
          ) : null}
          {d.next_attempt_at ? (
            <Text size="xs">{t('timeline.nextAttempt', { at: t.date(str(d.next_attempt_at)) })}</Text>
          ) : null}
        </Stack>
      );
    case 'WebhookDelivered':
      return <Text size="sm">{t('timeline.deliveredBody', { attempts: Number(d.attempts) })}</Text>;
    case 'WebhookDeliveryAbandoned':
      return (
        <Text size="sm">
          {t('timeline.abandonedBody', { attempts: Number(d.attempts), error: str(d.last_error) })}
        </Text>
      );
    default:
      return (
        <Code block tabIndex={0}>
          {JSON.stringify(d, null, 2)}
        </Code>
      );
  }
}

function Fact({ label, value, testId }: { label: string; value: React.ReactNode; testId?: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text size="sm" component="div" data-testid={testId}>
        {value}
      </Text>
    </div>
  );
}

export function MessagePage() {
  const t = useT();
  const can = useCan();
  const session = useSession();
  const client = useQueryClient();
  const id = useParams().id ?? '';
  // Followed from the send page: the gateway accepted it, the read models may not hold it yet.
  const justSent = typeof (useLocation().state as { acceptedAt?: unknown } | null)?.acceptedAt === 'number';
  const botName = useBotNames();
  // After a resend the page follows the log again for a while, to show the new attempt.
  // (A ref: the interval is worked out after each fetch, with whatever value is current then.)
  const followUntil = useRef(0);
  const detail = useQuery({
    queryKey: ['message', id],
    queryFn: () =>
      api<{ message: MessageRow | null; timeline: TimelineEntry[] }>(
        'GET',
        `/messages/${encodeURIComponent(id)}`,
      ),
    // Followed closely until the message and its webhook have settled (and for a while after a resend),
    // then at a slower pace: a webhook may still be resent or recovered from elsewhere.
    // A message just sent is not found until its first events are read: asked again until it is.
    retry: (count, error) =>
      justSent && error instanceof ApiError && error.status === 404 ? true : count < 3,
    retryDelay: session.live_refresh_ms,
    refetchInterval: (q) => {
      const m = q.state.data?.message;
      const unsettled =
        !q.state.data || (m && (m.state === 'new' || !m.webhook_status || m.webhook_status === 'pending'));
      return unsettled || Date.now() < followUntil.current
        ? session.live_refresh_ms
        : session.live_refresh_ms * 5;
    },
  });
  const resend = useMutation({
    mutationFn: () => api('POST', `/messages/${encodeURIComponent(id)}/resend-webhook`),
    onSuccess: () => {
      followUntil.current = Date.now() + 60_000;
      return client.invalidateQueries({ queryKey: ['message', id] });
    },
  });
  if (justSent && !detail.data && (detail.isPending || detail.failureReason)) {
    return (
      <Stack>
        <Title order={1}>{t('message.title')}</Title>
        <Text data-testid="message-waiting">{t('message.waiting')}</Text>
        <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
          {t('message.id')}: <code>{id}</code>
        </Text>
        <Link to="/messages">{t('message.back')}</Link>
      </Stack>
    );
  }
  if (detail.error instanceof ApiError && detail.error.status === 404) {
    return (
      <Stack>
        <Title order={1}>{t('message.title')}</Title>
        <Text data-testid="message-not-found">{t('message.notFound')}</Text>
        <Link to="/messages">{t('message.back')}</Link>
      </Stack>
    );
  }
  if (detail.error) return <ProblemAlert error={detail.error} />;
  if (!detail.data) return <Loading />;
  const { message, timeline } = detail.data;
  const channel = currentChannel(timeline) as { service?: string } | undefined;
  const title = (type: string) => (`timeline.${type}` in en ? t(`timeline.${type}` as MessageKey) : type);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>{t('message.title')}</Title>
        <Link to="/messages">{t('message.back')}</Link>
      </Group>
      <Card withBorder>
        <SimpleGrid cols={{ base: 2, md: 4 }}>
          <Fact
            label={t('message.id')}
            value={<code style={{ overflowWrap: 'anywhere' }}>{id}</code>}
            testId="message-id"
          />
          <Fact
            label={t('messages.state')}
            value={message ? <StateBadge state={message.state} testId="message-state" /> : '—'}
          />
          <Fact label={t('messages.phone')} value={message?.phone ?? '—'} />
          <Fact
            label={t('messages.service')}
            value={channel ? channelName(channel) : messengerLabel(message?.messenger)}
            testId="message-channel"
          />
          <Fact
            label={t('messages.bot')}
            value={
              message?.bot_id ? botName(message.bot_id) : (message?.bot_name ?? t('messages.defaultBot'))
            }
          />
          <Fact label={t('messages.accepted')} value={<Time value={message?.accepted_at} />} />
          <Fact
            label={t('message.latency')}
            value={
              message?.accepted_at && message.finished_at
                ? t.ms(new Date(message.finished_at).getTime() - new Date(message.accepted_at).getTime())
                : '—'
            }
          />
          <Fact
            label={t('messages.webhook')}
            value={
              message?.webhook_status ? (
                <StateBadge state={message.webhook_status} testId="webhook-state" />
              ) : (
                '—'
              )
            }
          />
        </SimpleGrid>
      </Card>
      <Group>
        {can('resend-webhooks') ? (
          <Button
            variant="light"
            onClick={() => resend.mutate()}
            loading={resend.isPending}
            disabled={!message?.webhook_status}
            data-testid="resend-webhook"
          >
            {t('message.resend')}
          </Button>
        ) : null}
        {resend.isSuccess ? (
          <Text size="sm" c="teal.9" data-testid="resent">
            {t('message.resent')}
          </Text>
        ) : null}
      </Group>
      <ProblemAlert error={resend.error} />
      <Card withBorder>
        <Title order={2} size="h4" mb="md">
          {t('message.timeline')}
        </Title>
        <Timeline active={timeline.length} bulletSize={18} lineWidth={2} data-testid="timeline">
          {timeline.map((entry, i) => (
            <Timeline.Item
              key={entry.event_id}
              color={
                COLORS[entry.type] ??
                (entry.data.outcome === 'succeeded'
                  ? 'teal'
                  : entry.type.startsWith('Webhook')
                    ? 'orange'
                    : 'gray')
              }
              title={
                <Group gap="xs">
                  <Text fw={600} size="sm" data-testid="timeline-type">
                    {failedTitle(entry) ? t(failedTitle(entry)!) : title(entry.type)}
                  </Text>
                  <Text size="xs" c="dimmed">
                    <Time value={entry.at} />
                  </Text>
                </Group>
              }
            >
              <EntryBody entry={entry} t={t} previous={timeline[i - 1]} botName={botName} />
            </Timeline.Item>
          ))}
        </Timeline>
        <Text size="xs" c="dimmed" mt="md">
          {t('message.timelineNote')}
        </Text>
      </Card>
    </Stack>
  );
}
