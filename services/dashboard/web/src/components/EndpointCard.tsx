import {
  Button,
  Card,
  Code,
  Collapse,
  Divider,
  Group,
  Modal,
  SimpleGrid,
  Stack,
  Text,
  Title,
} from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api.js';
import { useT } from '../i18n/locale.js';
import { useCan } from '../session.js';
import type { EndpointList, EndpointWithHealth } from '../types.js';
import { ConfirmButton, ProblemAlert } from './common.js';
import { EndpointForm } from './EndpointForm.js';
import { EndpointStateBadges, Figure, HealthFigures } from './EndpointHealth.js';
import { EndpointSecrets } from './EndpointSecrets.js';
import { TestDeliveryResult, type TestDelivery } from './TestDeliveryResult.js';

/** What a person calls an endpoint: its description, else its URL. */
export const endpointName = (e: { description: string; url: string }) => e.description || e.url;

/** One endpoint: where it is, what it receives, how it has fared, and what may be done with it. */
export function EndpointCard({
  endpoint,
  rules,
  onChanged,
}: {
  endpoint: EndpointWithHealth;
  rules: Pick<EndpointList, 'event_types' | 'limits'>;
  onChanged: () => Promise<unknown>;
}) {
  const t = useT();
  const can = useCan();
  const name = endpointName(endpoint);
  const [editing, setEditing] = useState(false);
  const [secretsOpen, setSecretsOpen] = useState(false);
  const test = useMutation({
    mutationFn: () => api<TestDelivery>('POST', `/webhook/endpoints/${endpoint.id}/test`),
  });
  return (
    <Card withBorder data-testid={`endpoint-${endpoint.id}`}>
      <Stack gap="sm">
        <Group justify="space-between" align="flex-start">
          <Stack gap={2} style={{ minWidth: 0, flex: '1 1 14rem' }}>
            <Title order={2} size="h4" style={{ overflowWrap: 'anywhere' }} data-testid="endpoint-name">
              {name}
            </Title>
            {endpoint.description ? (
              <Text
                size="sm"
                c="dimmed"
                style={{ overflowWrap: 'anywhere' }}
                data-testid="endpoint-url-shown"
              >
                {endpoint.url}
              </Text>
            ) : null}
          </Stack>
          <EndpointStateBadges endpoint={endpoint} />
        </Group>
        {!endpoint.enabled && endpoint.disabled_reason ? (
          <Text size="sm" c="red.9" data-testid="disabled-reason">
            {t('endpoints.disabledReason', { reason: endpoint.disabled_reason })}
          </Text>
        ) : null}
        <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="sm">
          <HealthFigures endpoint={endpoint} />
          <Figure label={t('endpoints.rateLimit')}>
            {endpoint.rate_limit_per_second === null
              ? t('endpoints.noRateLimit')
              : t('endpoints.perSecond', { count: endpoint.rate_limit_per_second })}
          </Figure>
        </SimpleGrid>
        <Group gap={6}>
          <Text size="sm" c="dimmed">
            {t('endpoints.receives')}
          </Text>
          {endpoint.event_types.length === 0 ? (
            <Text size="sm" data-testid="endpoint-types">
              {t('endpoints.everyType')}
            </Text>
          ) : (
            endpoint.event_types.map((type) => (
              <Code key={type} data-testid="endpoint-type">
                {type}
              </Code>
            ))
          )}
        </Group>
        <Divider />
        <Group gap="xs">
          {can('manage-webhook') ? (
            <>
              <Button
                size="compact-sm"
                variant="light"
                onClick={() => setEditing(true)}
                data-testid="edit-endpoint"
              >
                {t('endpoints.edit')}
              </Button>
              <Button
                size="compact-sm"
                variant="light"
                color="indigo"
                onClick={() => test.mutate()}
                loading={test.isPending}
                data-testid="send-test-event"
              >
                {t('webhook.testSend')}
              </Button>
            </>
          ) : null}
          <Button
            size="compact-sm"
            variant="subtle"
            onClick={() => setSecretsOpen((o) => !o)}
            aria-expanded={secretsOpen}
            data-testid="toggle-secrets"
          >
            {t('webhook.secrets')}
          </Button>
          {can('manage-webhook') ? (
            <>
              {endpoint.enabled ? (
                <ConfirmButton
                  label={t('endpoints.disable')}
                  title={t('endpoints.disableTitle', { name })}
                  body={<Text size="sm">{t('endpoints.disableBody')}</Text>}
                  confirmLabel={t('endpoints.disable')}
                  color="orange"
                  size="compact-sm"
                  testId="disable-endpoint"
                  onConfirm={async () => {
                    await api('POST', `/webhook/endpoints/${endpoint.id}/disable`, {});
                    await onChanged();
                  }}
                />
              ) : (
                <ConfirmButton
                  label={t('endpoints.enable')}
                  title={t('endpoints.enableTitle', { name })}
                  body={<Text size="sm">{t('endpoints.enableBody')}</Text>}
                  confirmLabel={t('endpoints.enable')}
                  color="teal"
                  size="compact-sm"
                  testId="enable-endpoint"
                  onConfirm={async () => {
                    await api('POST', `/webhook/endpoints/${endpoint.id}/enable`);
                    await onChanged();
                  }}
                />
              )}
              <ConfirmButton
                label={t('endpoints.remove')}
                title={t('endpoints.removeTitle', { name })}
                body={<Text size="sm">{t('endpoints.removeBody')}</Text>}
                confirmLabel={t('endpoints.remove')}
                size="compact-sm"
                testId="remove-endpoint"
                onConfirm={async () => {
                  await api('DELETE', `/webhook/endpoints/${endpoint.id}`);
                  await onChanged();
                }}
              />
            </>
          ) : null}
        </Group>
        <ProblemAlert error={test.error} />
        {test.data ? <TestDeliveryResult result={test.data} /> : null}
        <Collapse expanded={secretsOpen}>
          {secretsOpen ? <EndpointSecrets endpoint={endpoint} name={name} onChanged={onChanged} /> : null}
        </Collapse>
      </Stack>
      <Modal
        closeButtonProps={{ 'aria-label': t('common.close') }}
        opened={editing}
        onClose={() => setEditing(false)}
        title={t('endpoints.editTitle', { name })}
        centered
      >
        <EndpointForm
          rules={rules}
          editing={endpoint}
          onCancel={() => setEditing(false)}
          onSaved={async () => {
            setEditing(false);
            await onChanged();
          }}
        />
      </Modal>
    </Card>
  );
}
