import { Badge, Button, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api.js';
import { ConfirmButton, Disallowed, Loading, ProblemAlert, Time } from '../components/common.js';
import { PhoneInput } from '../components/PhoneInput.js';
import { useT } from '../i18n/locale.js';
import { useCan } from '../session.js';
import type { ClientView } from '../types.js';
import { useBotNames } from './Bots.js';

function ChangeNumber({ from }: { from: string }) {
  const t = useT();
  const [next, setNext] = useState('');
  const [answer, setAnswer] = useState<{ event_id: string } | undefined>();
  // One idempotency key per change asked for: a retried confirmation changes the number once.
  const [idempotencyKey, setIdempotencyKey] = useState(() => crypto.randomUUID());
  return (
    <Card withBorder>
      <Stack>
        <Title order={2} size="h4">
          {t('clients.change')}
        </Title>
        <Text size="sm" c="dimmed">
          {t('clients.changeIntro')}
        </Text>
        <PhoneInput
          label={t('clients.newNumber')}
          value={next}
          onChange={(e) => {
            setNext(e.currentTarget.value);
            setIdempotencyKey(crypto.randomUUID());
          }}
          data-testid="new-phone"
        />
        <Group>
          <ConfirmButton
            label={t('clients.changeButton')}
            title={t('clients.changeTitle')}
            body={<Text size="sm">{t('clients.changeBody', { from, to: next })}</Text>}
            confirmLabel={t('clients.changeConfirm')}
            color="red.9"
            variant="filled"
            disabled={!next}
            testId="change-phone"
            onConfirm={async () => {
              setAnswer(
                await api<{ event_id: string }>('POST', '/clients/change-phone', {
                  idempotency_key: idempotencyKey,
                  old_phone: from,
                  new_phone: next,
                }),
              );
            }}
          />
        </Group>
        {answer ? (
          <Text size="sm" data-testid="change-accepted">
            {t('clients.changeAccepted')}{' '}
            <Link to={`/messages/${answer.event_id}`}>{t('clients.follow')}</Link>
          </Text>
        ) : null}
      </Stack>
    </Card>
  );
}

export function ClientsPage() {
  const t = useT();
  const can = useCan();
  const botName = useBotNames();
  const [phone, setPhone] = useState('');
  const [asked, setAsked] = useState('');
  const client = useQuery({
    queryKey: ['client', asked],
    queryFn: () => api<ClientView>('GET', `/clients/${encodeURIComponent(asked)}`),
    enabled: asked.length > 0,
    retry: false,
  });
  const lookup = useMutation({ mutationFn: () => Promise.resolve(setAsked(phone)) });
  return (
    <Stack>
      <Title order={1}>{t('clients.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('clients.intro')}
      </Text>
      <Card withBorder>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            lookup.mutate();
          }}
        >
          <Group align="flex-end">
            <PhoneInput
              label={t('messages.phone')}
              required
              value={phone}
              onChange={(e) => setPhone(e.currentTarget.value)}
              style={{ flex: 1 }}
              data-testid="client-phone"
            />
            <Button type="submit" data-testid="lookup">
              {t('clients.lookup')}
            </Button>
          </Group>
        </form>
      </Card>
      <ProblemAlert error={client.error} />
      {asked && client.isPending ? <Loading /> : null}
      {client.data ? (
        <Card withBorder data-testid="client-result">
          <Stack>
            <Group>
              <Title order={2} size="h4">
                {client.data.phone_number}
              </Title>
              <Badge color={client.data.exists ? 'teal' : 'gray'}>
                {client.data.exists ? t('clients.known') : t('clients.unknown')}
              </Badge>
            </Group>
            {client.data.links.length > 0 ? (
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>{t('messages.bot')}</Table.Th>
                    <Table.Th>{t('messages.service')}</Table.Th>
                    <Table.Th>{t('clients.chat')}</Table.Th>
                    <Table.Th>{t('clients.reachable')}</Table.Th>
                    <Table.Th>{t('clients.since')}</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {client.data.links.map((l) => (
                    <Table.Tr key={l.bot_id + l.chat_id}>
                      <Table.Td>{l.bot_name ?? botName(l.bot_id)}</Table.Td>
                      <Table.Td>{l.messenger ?? '—'}</Table.Td>
                      <Table.Td>
                        <code>{l.chat_id}</code>
                      </Table.Td>
                      <Table.Td>
                        <Badge color={l.reachable ? 'teal' : 'red'} data-testid="reachable">
                          {l.reachable
                            ? t('clients.yes')
                            : t('clients.no', { reason: l.unreachable_reason ?? '' })}
                        </Badge>
                      </Table.Td>
                      <Table.Td>
                        <Time value={l.since} />
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            ) : (
              <Text size="sm">{t('clients.noLinks')}</Text>
            )}
          </Stack>
        </Card>
      ) : null}
      {client.data?.exists ? (
        can('change-phone') ? (
          // Keyed by the number: another client's form starts empty, without the last one's answer.
          <ChangeNumber key={client.data.phone_number} from={client.data.phone_number} />
        ) : (
          <Disallowed />
        )
      ) : null}
    </Stack>
  );
}
