import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { API_KEY_SCOPES, LEGACY_API_KEY_SCOPES } from '@mds/contracts/api-keys';
import { api } from '../api.js';
import { CopyValue, Disallowed, Loading, ProblemAlert, Time } from '../components/common.js';
import {
  KeyStatus,
  keyWorks,
  RevokeKeyButton,
  RollKeyButton,
  useKeyName,
  type ShownKey,
} from '../components/KeyActions.js';
import { useT } from '../i18n/locale.js';
import { useCan } from '../session.js';
import type { KeyView } from '../types.js';

/** A new key gets what a key named without scopes gets: change_phone only when ticked on purpose. */
const DEFAULT_SCOPES: string[] = [...LEGACY_API_KEY_SCOPES];

export function KeysPage() {
  const t = useT();
  const can = useCan();
  const client = useQueryClient();
  const name = useKeyName();
  const keys = useQuery({ queryKey: ['keys'], queryFn: () => api<{ keys: KeyView[] }>('GET', '/keys') });
  const refresh = () => client.invalidateQueries({ queryKey: ['keys'] });
  const [label, setLabel] = useState('');
  const [scopes, setScopes] = useState<string[]>(DEFAULT_SCOPES);
  const [created, setCreated] = useState<ShownKey | undefined>();
  const create = useMutation({
    mutationFn: () => api<ShownKey>('POST', '/keys', { label, scopes }),
    onSuccess: async (key) => {
      setCreated(key);
      setLabel('');
      setScopes(DEFAULT_SCOPES);
      await refresh();
    },
  });
  return (
    <Stack>
      <Title order={1}>{t('keys.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('keys.intro')}
      </Text>
      {can('manage-keys') ? (
        <Card withBorder>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              create.mutate();
            }}
          >
            <Group align="flex-end">
              <TextInput
                label={t('keys.label')}
                description={t('keys.labelHint')}
                required
                maxLength={100}
                value={label}
                onChange={(e) => setLabel(e.currentTarget.value)}
                style={{ flex: 1 }}
                data-testid="key-label"
              />
              <Button
                type="submit"
                loading={create.isPending}
                disabled={scopes.length === 0}
                data-testid="create-key"
              >
                {t('keys.create')}
              </Button>
            </Group>
            <Checkbox.Group
              mt="md"
              label={t('keys.scopes')}
              description={t('keys.scopesHint')}
              error={scopes.length === 0 ? t('keys.noScope') : undefined}
              value={scopes}
              onChange={setScopes}
            >
              <Stack gap="xs" mt="xs">
                {API_KEY_SCOPES.map((scope) => (
                  <Checkbox
                    key={scope}
                    value={scope}
                    label={t(`keys.scope.${scope}`)}
                    description={scope === 'change_phone' ? t('keys.changePhoneHint') : undefined}
                    data-testid={`scope-${scope}`}
                  />
                ))}
              </Stack>
            </Checkbox.Group>
          </form>
          <ProblemAlert error={create.error} />
        </Card>
      ) : (
        <Disallowed />
      )}
      {created ? (
        <Alert
          color="teal"
          title={
            created.rolled_from
              ? t('keys.rolled', { label: name(created) })
              : t('keys.created', { label: created.label })
          }
          data-testid="created-key"
        >
          <Stack gap="xs">
            <Text size="sm">{t('keys.shownOnce')}</Text>
            {created.rolled_from ? (
              <Text size="sm" data-testid="old-key-end">
                {created.old_key_expires_at && Date.parse(created.old_key_expires_at) > Date.now()
                  ? t('keys.oldUntil', {
                      prefix: created.old_prefix ?? '',
                      time: t.date(created.old_key_expires_at),
                    })
                  : t('keys.oldStopped', { prefix: created.old_prefix ?? '' })}
              </Text>
            ) : null}
            <CopyValue value={created.api_key} label={t('keys.theKey')} testId="new-api-key" />
            <Group>
              <Button variant="subtle" onClick={() => setCreated(undefined)}>
                {t('keys.dismiss')}
              </Button>
            </Group>
          </Stack>
        </Alert>
      ) : null}
      <ProblemAlert error={keys.error} />
      {!keys.data ? (
        <Loading />
      ) : keys.data.keys.length === 0 ? (
        <Text>{t('keys.none')}</Text>
      ) : (
        <Table.ScrollContainer minWidth={980}>
          <Table striped data-testid="keys-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t('keys.label')}</Table.Th>
                <Table.Th>{t('keys.scopes')}</Table.Th>
                <Table.Th>{t('keys.creator')}</Table.Th>
                <Table.Th>{t('keys.createdAt')}</Table.Th>
                <Table.Th>{t('keys.lastUsed')}</Table.Th>
                <Table.Th>{t('keys.status')}</Table.Th>
                <Table.Th>{t('keys.actions')}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {keys.data.keys.map((k) => (
                <Table.Tr key={k.key_id} data-testid={`key-${k.key_id}`}>
                  <Table.Td>
                    <Text fw={500} size="sm">
                      {k.label || '—'}
                    </Text>
                    <Text size="xs" c="dimmed">
                      <code>{k.prefix}…</code>
                      {k.rolled_from ? (
                        <>
                          {' · '}
                          {t('keys.rolledFrom', {
                            prefix:
                              keys.data.keys.find((o) => o.key_id === k.rolled_from)?.prefix ??
                              `mds_${k.rolled_from}`,
                          })}
                        </>
                      ) : null}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} data-testid={`key-scopes-${k.key_id}`}>
                      {k.scopes.map((scope) => (
                        <Badge
                          key={scope}
                          variant="light"
                          color={scope === 'change_phone' ? 'orange' : 'blue'}
                          tt="none"
                          data-testid="key-scope"
                        >
                          {scope}
                        </Badge>
                      ))}
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    {k.created_by ? k.created_by.name || k.created_by.email : t('keys.byOperator')}
                  </Table.Td>
                  <Table.Td>
                    <Time value={k.issued_at} />
                  </Table.Td>
                  <Table.Td data-testid={`key-last-used-${k.key_id}`}>
                    <Stack gap={2}>
                      {k.last_used_at ? <Time value={k.last_used_at} /> : <span>{t('common.never')}</span>}
                      <Anchor
                        component={Link}
                        to={`/keys/${k.key_id}`}
                        size="xs"
                        data-testid={`requests-${k.key_id}`}
                      >
                        {t('keys.requests')}
                      </Anchor>
                    </Stack>
                  </Table.Td>
                  <Table.Td>
                    <KeyStatus k={k} />
                  </Table.Td>
                  <Table.Td>
                    {can('manage-keys') && keyWorks(k) ? (
                      <Group gap="xs" wrap="nowrap">
                        <RollKeyButton
                          k={k}
                          onRolled={async (key) => {
                            setCreated(key);
                            await refresh();
                          }}
                        />
                        {k.revoked_at ? null : <RevokeKeyButton k={k} onRevoked={refresh} />}
                      </Group>
                    ) : null}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
