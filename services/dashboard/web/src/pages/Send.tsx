import {
  Alert,
  Button,
  Card,
  NumberInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Text,
  Textarea,
  Title,
} from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api.js';
import { Disallowed, ProblemAlert } from '../components/common.js';
import { DateTimeField } from '../components/DateTimeField.js';
import { PhoneInput } from '../components/PhoneInput.js';
import { RowsEditor } from '../components/RowsEditor.js';
import { messengerNamed, messengers } from '@mds/contracts/messengers';
import { MessengerPreview, type Draft } from '../components/Preview.js';
import { useT } from '../i18n/locale.js';
import { firstMessenger, messengerChoices } from '../messengers.js';
import { useCan } from '../session.js';
import { useBots } from './Bots.js';

export function SendPage() {
  const t = useT();
  const can = useCan();
  const bots = useBots();
  const [phone, setPhone] = useState('');
  const [service, setService] = useState(firstMessenger);
  const [botName, setBotName] = useState<string | null>(null);
  const [draft, setDraft] = useState<Draft>({ text: '', buttons: [] });
  const [ttl, setTtl] = useState<number | string>('');
  const [metadata, setMetadata] = useState<{ key: string; value: string }[]>([]);
  const [sendAt, setSendAt] = useState('');
  const [fallback, setFallback] = useState<{ service: string; bot_name: string }[]>([]);
  const botChoices = (messenger: string) =>
    (bots.data?.bots ?? [])
      .filter((b) => b.messenger === messenger)
      .map((b) => ({
        value: b.name,
        label: b.default ? `${b.name} (${t('bots.default')})` : b.name,
      }));
  // One idempotency key per composed message: a double click or a retry sends it once.
  const [idempotencyKey, setIdempotencyKey] = useState(() => crypto.randomUUID());
  const send = useMutation({
    mutationFn: () =>
      api<{ status: string; event_id: string }>('POST', '/send', {
        idempotency_key: idempotencyKey,
        phone_number: phone,
        service,
        text: draft.text,
        ...(botName ? { bot_name: botName } : {}),
        ...(draft.buttons.length ? { buttons: draft.buttons } : {}),
        ...(typeof ttl === 'number' ? { ttl_seconds: ttl } : {}),
        metadata: metadata.length ? Object.fromEntries(metadata.map((m) => [m.key, m.value])) : undefined,
        ...(sendAt ? { send_at: sendAt } : {}),
        ...(fallback.length
          ? {
              fallback: fallback.map((f) => ({
                service: f.service,
                ...(f.bot_name ? { bot_name: f.bot_name } : {}),
              })),
            }
          : {}),
      }),
    onSuccess: () => setIdempotencyKey(crypto.randomUUID()),
  });
  if (!can('send'))
    return (
      <Stack>
        <Title order={1}>{t('send.title')}</Title>
        <Disallowed />
      </Stack>
    );
  return (
    <Stack>
      <Title order={1}>{t('send.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('send.intro')}
      </Text>
      <SimpleGrid cols={{ base: 1, lg: 2 }}>
        <Card withBorder>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              send.mutate();
            }}
          >
            <Stack>
              <PhoneInput
                label={t('messages.phone')}
                required
                value={phone}
                onChange={(e) => setPhone(e.currentTarget.value)}
                data-testid="send-phone"
              />
              <div>
                <Text size="sm" fw={500} mb={4} id="service-label">
                  {t('messages.service')}
                </Text>
                <SegmentedControl
                  aria-labelledby="service-label"
                  value={service}
                  onChange={(v) => {
                    setService(v);
                    setBotName(null);
                  }}
                  data={messengerChoices()}
                  data-testid="send-service"
                />
              </div>
              <Select
                label={t('messages.bot')}
                placeholder={t('messages.defaultBot')}
                clearable
                value={botName}
                onChange={setBotName}
                data={botChoices(service)}
              />
              <Textarea
                label={t('send.text')}
                required
                autosize
                minRows={4}
                maxLength={messengerNamed(service)?.textLimit}
                value={draft.text}
                onChange={(e) => setDraft({ ...draft, text: e.currentTarget.value })}
                data-testid="send-text"
              />
              <RowsEditor
                title={t('send.buttons')}
                rows={draft.buttons}
                onChange={(buttons) => setDraft({ ...draft, buttons })}
                fields={[
                  {
                    name: 'text',
                    label: (n) => t('send.buttonText', { n }),
                    testId: 'button-text',
                    flex: 1,
                    props: { maxLength: 64, required: true },
                  },
                  {
                    name: 'url',
                    label: (n) => t('send.buttonUrl', { n }),
                    testId: 'button-url',
                    flex: 2,
                    props: { type: 'url', required: true },
                  },
                ]}
                max={10}
                blank={{ text: '', url: 'https://' }}
                addLabel={t('send.addButton')}
                addTestId="add-button"
                removeLabel={(n) => t('send.removeButton', { n })}
              />
              <RowsEditor
                title={t('send.metadata')}
                hint={t('send.metadataHint')}
                rows={metadata}
                onChange={setMetadata}
                fields={[
                  {
                    name: 'key',
                    label: (n) => t('send.metadataKey', { n }),
                    testId: 'metadata-key',
                    flex: 1,
                    props: { maxLength: 40, required: true, pattern: '[A-Za-z0-9_.\\-]{1,40}' },
                  },
                  {
                    name: 'value',
                    label: (n) => t('send.metadataValue', { n }),
                    testId: 'metadata-value',
                    flex: 2,
                    props: { maxLength: 500 },
                  },
                ]}
                max={20}
                blank={{ key: '', value: '' }}
                addLabel={t('send.addMetadata')}
                addTestId="add-metadata"
                removeLabel={(n) => t('send.removeMetadata', { n })}
              />
              <RowsEditor
                title={t('send.fallback')}
                hint={t('send.fallbackHint')}
                rows={fallback}
                onChange={setFallback}
                fields={[
                  {
                    name: 'service',
                    label: (n) => t('send.fallbackService', { n }),
                    testId: 'fallback-service',
                    flex: 1,
                    choices: () => messengerChoices(),
                    selectProps: { required: true, allowDeselect: false },
                    resets: ['bot_name'],
                  },
                  {
                    name: 'bot_name',
                    label: (n) => t('send.fallbackBot', { n }),
                    testId: 'fallback-bot',
                    flex: 1,
                    choices: (row) => botChoices(row.service),
                    selectProps: { clearable: true, placeholder: t('messages.defaultBot') },
                  },
                ]}
                max={3}
                // A new row starts on a messenger other than the send's own: the usual fallback.
                blank={{
                  service: messengers().find((m) => m.name !== service)?.name ?? service,
                  bot_name: '',
                }}
                addLabel={t('send.addFallback')}
                addTestId="add-fallback"
                removeLabel={(n) => t('send.removeFallback', { n })}
              />
              <DateTimeField
                label={t('send.sendAt')}
                description={t('send.sendAtHint')}
                value={sendAt}
                onChange={setSendAt}
                data-testid="send-at-field"
              />
              <NumberInput
                label={t('send.ttl')}
                description={t('send.ttlHint')}
                min={10}
                max={604_800}
                allowDecimal={false}
                allowNegative={false}
                thousandSeparator=" "
                value={ttl}
                onChange={setTtl}
                data-testid="send-ttl"
              />
              <ProblemAlert error={send.error} />
              <Button type="submit" loading={send.isPending} data-testid="send">
                {t('send.submit')}
              </Button>
              {send.data ? (
                <Alert color="teal" title={t('send.accepted')} data-testid="send-accepted">
                  <Text size="sm">
                    event_id: <code data-testid="sent-event-id">{send.data.event_id}</code>
                  </Text>
                  <Button
                    component={Link}
                    to={`/messages/${send.data.event_id}`}
                    // The read models may not have it yet: the page says it was accepted and waits for it.
                    state={{ acceptedAt: Date.now() }}
                    mt="xs"
                    variant="light"
                    data-testid="follow"
                  >
                    {t('send.follow')}
                  </Button>
                </Alert>
              ) : null}
            </Stack>
          </form>
        </Card>
        <Stack>
          <Title order={2} size="h4">
            {t('send.preview')}
          </Title>
          {messengers().map((m) => (
            <MessengerPreview key={m.name} messenger={m} draft={draft} />
          ))}
        </Stack>
      </SimpleGrid>
    </Stack>
  );
}
