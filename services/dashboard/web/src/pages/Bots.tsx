import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api.js';
import { ConfirmButton, Disallowed, Loading, ProblemAlert } from '../components/common.js';
import { PasswordField } from '../components/PasswordField.js';
import { messengerLabel } from '../components/ErrorExplanation.js';
import { useLocale, useT } from '../i18n/locale.js';
import { firstMessenger, messengerChoices } from '../messengers.js';
import { messengers } from '@mds/contracts/messengers';
import { useCan, useSession } from '../session.js';
import type { BotView } from '../types.js';

export function useBots() {
  const session = useSession();
  return useQuery({
    queryKey: ['bots'],
    queryFn: () => api<{ bots: BotView[] }>('GET', '/bots'),
    refetchInterval: session.live_refresh_ms * 5,
  });
}

/** A bot's name by its id (the id itself for a bot removed since). */
export function useBotNames(): (botId: string) => string {
  const bots = useBots();
  return (botId) => bots.data?.bots.find((b) => b.bot_id === botId)?.name ?? botId.slice(0, 8);
}

function BotCard({ bot }: { bot: BotView }) {
  const t = useT();
  const can = useCan();
  const client = useQueryClient();
  const refresh = () => client.invalidateQueries({ queryKey: ['bots'] });
  const check = useMutation({
    mutationFn: () =>
      api<{ ok: boolean; reason?: string; detail?: string; username?: string }>(
        'POST',
        `/bots/${bot.bot_id}/check`,
      ),
  });
  const makeDefault = useMutation({
    mutationFn: () => api('PUT', `/bots/${bot.bot_id}/default`),
    onSuccess: refresh,
  });
  return (
    <Card withBorder data-testid={`bot-${bot.name}`}>
      <Stack gap="xs">
        <Group justify="space-between">
          <Group gap="xs">
            <Title order={2} size="h4">
              {bot.name}
            </Title>
            <Badge variant="light">{messengerLabel(bot.messenger)}</Badge>
            {bot.default ? <Badge color="teal">{t('bots.default')}</Badge> : null}
          </Group>
          <Text size="sm" c="dimmed">
            @{bot.username}
          </Text>
        </Group>
        <SimpleGrid cols={3}>
          <div>
            <Text size="xs" c="dimmed">
              {t('bots.lastUpdate')}
            </Text>
            <Text size="sm">
              {bot.last_update_at
                ? `${t.ago(bot.last_update_at)} (${bot.last_update_type})`
                : t('common.never')}
            </Text>
          </div>
          <div>
            <Text size="xs" c="dimmed">
              {t('bots.lastHour')}
            </Text>
            <Text size="sm" data-testid={`bot-sent-${bot.name}`}>
              {t('bots.hourCounts', { sent: bot.last_hour.sent, failed: bot.last_hour.failed })}
            </Text>
          </div>
          <div>
            <Text size="xs" c="dimmed">
              {t('bots.rateLimited')}
            </Text>
            <Text size="sm">{t.number(bot.last_hour.rate_limited)}</Text>
          </div>
        </SimpleGrid>
        {check.data ? (
          <Text size="sm" c={check.data.ok ? 'teal.9' : 'red.8'} data-testid="bot-check">
            {check.data.ok
              ? t('bots.checkOk', { username: check.data.username ?? '' })
              : t('bots.checkFailed', { detail: check.data.detail ?? '' })}
          </Text>
        ) : null}
        <ProblemAlert error={check.error ?? makeDefault.error} />
        <Group>
          {can('manage-bots') ? (
            <Button
              size="xs"
              variant="light"
              onClick={() => check.mutate()}
              loading={check.isPending}
              data-testid="check-bot"
            >
              {t('bots.check')}
            </Button>
          ) : null}
          {can('manage-bots') && !bot.default ? (
            <Button
              size="xs"
              variant="light"
              onClick={() => makeDefault.mutate()}
              loading={makeDefault.isPending}
            >
              {t('bots.makeDefault')}
            </Button>
          ) : null}
          {can('manage-bots') ? (
            <ConfirmButton
              label={t('bots.remove')}
              title={t('bots.removeTitle', { name: bot.name })}
              body={<Text size="sm">{t('bots.removeBody')}</Text>}
              confirmLabel={t('bots.removeConfirm')}
              testId={`remove-bot-${bot.name}`}
              onConfirm={async () => {
                await api('DELETE', `/bots/${bot.bot_id}`);
                await refresh();
              }}
            />
          ) : null}
        </Group>
      </Stack>
    </Card>
  );
}

export function BotsPage() {
  const t = useT();
  const { locale } = useLocale();
  const listFormat = new Intl.ListFormat(locale, { type: 'conjunction' });
  const can = useCan();
  const client = useQueryClient();
  const bots = useBots();
  const [form, setForm] = useState({
    messenger: firstMessenger(),
    name: '',
    token: '',
    default: false,
  });
  const add = useMutation({
    mutationFn: () => api('POST', '/bots', form),
    onSuccess: async () => {
      setForm({ ...form, name: '', token: '', default: false });
      await client.invalidateQueries({ queryKey: ['bots'] });
    },
  });
  return (
    <Stack>
      <Title order={1}>{t('bots.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('bots.intro', { messengers: listFormat.format(messengers().map((m) => m.label)) })}
      </Text>
      {can('manage-bots') ? (
        <Card withBorder>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              add.mutate();
            }}
          >
            <Stack>
              <Title order={2} size="h4">
                {t('bots.add')}
              </Title>
              <SimpleGrid cols={{ base: 1, sm: 3 }}>
                <Select
                  label={t('messages.service')}
                  value={form.messenger}
                  allowDeselect={false}
                  onChange={(v) => setForm({ ...form, messenger: v ?? form.messenger })}
                  data={messengerChoices()}
                  data-testid="bot-messenger"
                />
                <TextInput
                  label={t('bots.name')}
                  description={t('bots.nameHint')}
                  required
                  value={form.name}
                  onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
                  data-testid="bot-name"
                />
                <PasswordField
                  label={t('bots.token')}
                  description={t('bots.tokenHint')}
                  required
                  value={form.token}
                  onChange={(e) => setForm({ ...form, token: e.currentTarget.value })}
                  data-testid="bot-token"
                />
              </SimpleGrid>
              <Checkbox
                label={t('bots.makeDefaultOnAdd')}
                checked={form.default}
                onChange={(e) => setForm({ ...form, default: e.currentTarget.checked })}
              />
              <ProblemAlert error={add.error} />
              <Group>
                <Button type="submit" loading={add.isPending} data-testid="add-bot">
                  {t('bots.addSubmit')}
                </Button>
              </Group>
            </Stack>
          </form>
        </Card>
      ) : (
        <Disallowed />
      )}
      <ProblemAlert error={bots.error} />
      {!bots.data ? (
        <Loading />
      ) : bots.data.bots.length === 0 ? (
        <Text>{t('bots.none')}</Text>
      ) : (
        <SimpleGrid cols={{ base: 1, lg: 2 }}>
          {bots.data.bots.map((b) => (
            <BotCard key={b.bot_id} bot={b} />
          ))}
        </SimpleGrid>
      )}
    </Stack>
  );
}
