import {
  Accordion,
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Stack,
  Switch,
  Table,
  Tabs,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { VERIFY_SNIPPETS, WEBHOOK_CATALOGUE } from '../../../src/domain/webhook-catalogue.js';
import { api } from '../api.js';
import { ConfirmButton, CopyValue, Disallowed, Loading, ProblemAlert, Time } from '../components/common.js';
import type { MessageKey } from '../i18n/en.js';
import { useT } from '../i18n/locale.js';
import { useCan } from '../session.js';
import type { WebhookView } from '../types.js';

interface TestDelivery {
  webhook_id: string;
  request: { url: string; headers: Record<string, string>; body: string };
  response: {
    outcome: 'succeeded' | 'failed' | 'no_response';
    status_code: number | null;
    latency_ms: number;
    excerpt: string;
    error: string | null;
  };
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

function TestEvent() {
  const t = useT();
  const test = useMutation({ mutationFn: () => api<TestDelivery>('POST', '/webhook/test') });
  const result = test.data;
  return (
    <Card withBorder>
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h4">
            {t('webhook.test')}
          </Title>
          <Button onClick={() => test.mutate()} loading={test.isPending} data-testid="send-test-event">
            {t('webhook.testSend')}
          </Button>
        </Group>
        <Text size="sm" c="dimmed">
          {t('webhook.testIntro')}
        </Text>
        <ProblemAlert error={test.error} />
        {result ? (
          <Stack data-testid="test-result">
            <Group>
              <Badge
                color={result.response.outcome === 'succeeded' ? 'teal' : 'red'}
                data-testid="test-outcome"
              >
                {t(`webhook.outcome.${result.response.outcome}`)}
              </Badge>
              <Text size="sm">
                {t('webhook.testAnswer', {
                  status: result.response.status_code ?? '—',
                  latency: t.ms(result.response.latency_ms),
                })}
              </Text>
            </Group>
            <Text fw={600} size="sm">
              {t('webhook.request')}
            </Text>
            <Code block tabIndex={0}>{`POST ${result.request.url}\n${Object.entries(result.request.headers)
              .map(([k, v]) => `${k}: ${v}`)
              .join('\n')}\n\n${result.request.body}`}</Code>
            <Text fw={600} size="sm">
              {t('webhook.response')}
            </Text>
            <Code block tabIndex={0} data-testid="test-response">
              {result.response.error ?? (result.response.excerpt || t('webhook.emptyBody'))}
            </Code>
          </Stack>
        ) : null}
      </Stack>
    </Card>
  );
}

function Catalogue() {
  const t = useT();
  return (
    <Card withBorder>
      <Stack>
        <Title order={2} size="h4">
          {t('webhook.catalogue')}
        </Title>
        <Text size="sm" c="dimmed">
          {t('webhook.catalogueIntro')}
        </Text>
        <Accordion variant="separated" data-testid="catalogue">
          {WEBHOOK_CATALOGUE.map((entry) => (
            <Accordion.Item key={entry.type} value={entry.type}>
              <Accordion.Control>
                <Group gap="sm">
                  <Code>{entry.type}</Code>
                  <Text size="sm">{t(`catalogue.${entry.type}` as MessageKey)}</Text>
                </Group>
              </Accordion.Control>
              <Accordion.Panel>
                <Stack gap="xs">
                  <Text fw={600} size="sm">
                    {t('webhook.example')}
                  </Text>
                  <Code block tabIndex={0}>
                    {pretty(entry.example)}
                  </Code>
                  <Text fw={600} size="sm">
                    {t('webhook.schema')}
                  </Text>
                  <Code block tabIndex={0}>
                    {pretty(entry.schema)}
                  </Code>
                </Stack>
              </Accordion.Panel>
            </Accordion.Item>
          ))}
        </Accordion>
        <Title order={3} size="h5">
          {t('webhook.verify')}
        </Title>
        <Text size="sm" c="dimmed">
          {t('webhook.verifyIntro')}
        </Text>
        <Tabs defaultValue={VERIFY_SNIPPETS[0]!.language}>
          <Tabs.List>
            {VERIFY_SNIPPETS.map((s) => (
              <Tabs.Tab key={s.language} value={s.language}>
                {s.language === 'Any language' ? t('webhook.anyLanguage') : s.language}
              </Tabs.Tab>
            ))}
          </Tabs.List>
          {VERIFY_SNIPPETS.map((s) => (
            <Tabs.Panel key={s.language} value={s.language} pt="xs">
              <Code block tabIndex={0}>
                {s.code}
              </Code>
            </Tabs.Panel>
          ))}
        </Tabs>
      </Stack>
    </Card>
  );
}

export function WebhookPage() {
  const t = useT();
  const can = useCan();
  const client = useQueryClient();
  const webhook = useQuery({
    queryKey: ['webhook'],
    queryFn: () => api<{ webhook: WebhookView | null }>('GET', '/webhook'),
  });
  const [url, setUrl] = useState('');
  useEffect(() => setUrl(webhook.data?.webhook?.url ?? ''), [webhook.data?.webhook?.url]);
  const refresh = () => client.invalidateQueries({ queryKey: ['webhook'] });
  const save = useMutation({ mutationFn: () => api('PUT', '/webhook', { url }), onSuccess: refresh });
  const toggle = useMutation({
    mutationFn: (on: boolean) => api('POST', `/webhook/${on ? 'enable' : 'disable'}`),
    onSuccess: refresh,
  });
  const reveal = useMutation({
    mutationFn: () =>
      api<{ secrets: { secret_id: string; secret: string; expires_at: string | null }[] }>(
        'POST',
        '/webhook/secrets',
      ),
  });
  const [rotated, setRotated] = useState<string | undefined>();
  const hook = webhook.data?.webhook;
  return (
    <Stack>
      <Title order={1}>{t('webhook.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('webhook.intro')}
      </Text>
      <ProblemAlert error={webhook.error} />
      {webhook.isPending ? (
        <Loading />
      ) : (
        <Card withBorder>
          <Stack>
            <form
              onSubmit={(e) => {
                e.preventDefault();
                save.mutate();
              }}
            >
              <Group align="flex-end">
                <TextInput
                  label={t('webhook.url')}
                  placeholder="https://example.com/mds-webhooks"
                  type="url"
                  required
                  value={url}
                  readOnly={!can('manage-webhook')}
                  onChange={(e) => setUrl(e.currentTarget.value)}
                  style={{ flex: 1 }}
                  data-testid="webhook-url"
                />
                {can('manage-webhook') ? (
                  <Button type="submit" loading={save.isPending} data-testid="save-webhook">
                    {t('common.save')}
                  </Button>
                ) : null}
              </Group>
            </form>
            <ProblemAlert error={save.error ?? toggle.error} />
            {save.isSuccess ? (
              <Text size="sm" c="teal.9">
                {t('webhook.saved')}
              </Text>
            ) : null}
            {hook ? (
              <Switch
                label={
                  hook.enabled
                    ? t('webhook.enabled')
                    : t('webhook.disabled', { reason: hook.disabled_reason ?? '' })
                }
                checked={hook.enabled}
                disabled={!can('manage-webhook') || toggle.isPending}
                onChange={(e) => toggle.mutate(e.currentTarget.checked)}
                data-testid="webhook-enabled"
              />
            ) : (
              <Text size="sm">{t('webhook.none')}</Text>
            )}
            {!can('manage-webhook') ? <Disallowed /> : null}
          </Stack>
        </Card>
      )}
      {hook ? (
        <Card withBorder>
          <Stack>
            <Group justify="space-between">
              <Title order={2} size="h4">
                {t('webhook.secrets')}
              </Title>
              <Group>
                {can('reveal-secrets') ? (
                  <Button
                    variant="light"
                    onClick={() => reveal.mutate()}
                    loading={reveal.isPending}
                    data-testid="reveal-secrets"
                  >
                    {t('webhook.reveal')}
                  </Button>
                ) : null}
                {can('manage-webhook') ? (
                  <ConfirmButton
                    label={t('webhook.rotate')}
                    title={t('webhook.rotateTitle')}
                    body={<Text size="sm">{t('webhook.rotateBody')}</Text>}
                    confirmLabel={t('webhook.rotateConfirm')}
                    color="orange"
                    testId="rotate-secret"
                    onConfirm={async () => {
                      const answer = await api<{ secret: string }>('POST', '/webhook/rotate');
                      setRotated(answer.secret);
                      reveal.reset();
                      await refresh();
                    }}
                  />
                ) : null}
              </Group>
            </Group>
            <Text size="sm" c="dimmed">
              {t('webhook.secretsIntro')}
            </Text>
            {rotated ? (
              <Alert color="teal" title={t('webhook.rotated')}>
                <CopyValue value={rotated} label={t('webhook.newSecret')} />
              </Alert>
            ) : null}
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t('webhook.secretId')}</Table.Th>
                  <Table.Th>{t('keys.createdAt')}</Table.Th>
                  <Table.Th>{t('webhook.signsUntil')}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {hook.secrets.map((s) => (
                  <Table.Tr key={s.secret_id}>
                    <Table.Td>
                      <code>{s.secret_id.slice(0, 8)}</code>
                    </Table.Td>
                    <Table.Td>
                      <Time value={s.created_at} />
                    </Table.Td>
                    <Table.Td>
                      {s.expires_at ? (
                        <Time value={s.expires_at} />
                      ) : (
                        <Badge color="teal">{t('webhook.current')}</Badge>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <ProblemAlert error={reveal.error} />
            {reveal.data
              ? reveal.data.secrets.map((s) => (
                  <CopyValue
                    key={s.secret_id}
                    value={s.secret}
                    label={t('webhook.secretOf', { id: s.secret_id.slice(0, 8) })}
                    testId="revealed-secret"
                  />
                ))
              : null}
          </Stack>
        </Card>
      ) : null}
      {hook && can('manage-webhook') ? <TestEvent /> : null}
      <Catalogue />
    </Stack>
  );
}
