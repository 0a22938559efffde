import {
  ActionIcon,
  Alert,
  Button,
  Card,
  Group,
  NumberInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api.js';
import { Disallowed, ProblemAlert } from '../components/common.js';
import { DateTimeField } from '../components/DateTimeField.js';
import { PhoneInput } from '../components/PhoneInput.js';
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
  const [sendAt, setSendAt] = useState('');
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
        ...(sendAt ? { send_at: sendAt } : {}),
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
  const setButton = (i: number, patch: Partial<{ text: string; url: string }>) =>
    setDraft({ ...draft, buttons: draft.buttons.map((b, j) => (j === i ? { ...b, ...patch } : b)) });
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
                data={(bots.data?.bots ?? [])
                  .filter((b) => b.messenger === service)
                  .map((b) => ({
                    value: b.name,
                    label: b.default ? `${b.name} (${t('bots.default')})` : b.name,
                  }))}
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
              <Stack gap="xs">
                <Text size="sm" fw={500}>
                  {t('send.buttons')}
                </Text>
                {draft.buttons.map((b, i) => (
                  <Group key={i} align="flex-end" wrap="nowrap">
                    <TextInput
                      label={t('send.buttonText', { n: i + 1 })}
                      maxLength={64}
                      required
                      value={b.text}
                      onChange={(e) => setButton(i, { text: e.currentTarget.value })}
                      style={{ flex: 1 }}
                      data-testid={`button-text-${i}`}
                    />
                    <TextInput
                      label={t('send.buttonUrl', { n: i + 1 })}
                      type="url"
                      required
                      value={b.url}
                      onChange={(e) => setButton(i, { url: e.currentTarget.value })}
                      style={{ flex: 2 }}
                      data-testid={`button-url-${i}`}
                    />
                    <ActionIcon
                      variant="light"
                      color="red"
                      size="lg"
                      aria-label={t('send.removeButton', { n: i + 1 })}
                      onClick={() => setDraft({ ...draft, buttons: draft.buttons.filter((_, j) => j !== i) })}
                    >
                      ×
                    </ActionIcon>
                  </Group>
                ))}
                <Group>
                  <Button
                    variant="light"
                    size="xs"
                    disabled={draft.buttons.length >= 10}
                    onClick={() =>
                      setDraft({ ...draft, buttons: [...draft.buttons, { text: '', url: 'https://' }] })
                    }
                    data-testid="add-button"
                  >
                    {t('send.addButton')}
                  </Button>
                </Group>
              </Stack>
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
