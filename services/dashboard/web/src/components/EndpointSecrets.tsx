import { Alert, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api.js';
import { useT } from '../i18n/locale.js';
import { useCan } from '../session.js';
import type { EndpointView } from '../types.js';
import { ConfirmButton, CopyValue, ProblemAlert, Time } from './common.js';

/** One endpoint's signing secrets: listed by id, revealed on demand, rotated with an overlap. */
export function EndpointSecrets({
  endpoint,
  name,
  onChanged,
}: {
  endpoint: EndpointView;
  name: string;
  onChanged: () => Promise<unknown>;
}) {
  const t = useT();
  const can = useCan();
  const reveal = useMutation({
    mutationFn: () =>
      api<{ secrets: { secret_id: string; secret: string; expires_at: string | null }[] }>(
        'POST',
        `/webhook/endpoints/${endpoint.id}/secrets`,
      ),
  });
  const [rotated, setRotated] = useState<string | undefined>();
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={3} size="h5">
          {t('webhook.secrets')}
        </Title>
        <Group gap="xs">
          {can('reveal-secrets') ? (
            <Button
              variant="light"
              size="compact-sm"
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
              title={t('endpoints.rotateTitle', { name })}
              body={<Text size="sm">{t('webhook.rotateBody')}</Text>}
              confirmLabel={t('webhook.rotateConfirm')}
              color="orange"
              size="compact-sm"
              testId="rotate-secret"
              onConfirm={async () => {
                const answer = await api<{ secret: string }>(
                  'POST',
                  `/webhook/endpoints/${endpoint.id}/rotate`,
                );
                setRotated(answer.secret);
                reveal.reset();
                await onChanged();
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
          <CopyValue value={rotated} label={t('webhook.newSecret')} testId="rotated-secret" />
        </Alert>
      ) : null}
      <Table>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t('webhook.secretId')}</Table.Th>
            <Table.Th>{t('webhook.signsUntil')}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {endpoint.secrets.map((s) => (
            <Table.Tr key={s.secret_id}>
              <Table.Td>
                <code>{s.secret_id.slice(0, 8)}</code>
              </Table.Td>
              <Table.Td>
                {s.current || !s.expires_at ? (
                  <Badge color="teal">{t('webhook.current')}</Badge>
                ) : (
                  <Time value={s.expires_at} />
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
  );
}
