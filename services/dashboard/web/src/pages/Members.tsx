import {
  Alert,
  Badge,
  Button,
  Card,
  Group,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api.js';
import { ConfirmButton, CopyValue, Loading, ProblemAlert, Time } from '../components/common.js';
import { useT } from '../i18n/locale.js';
import { useCan, useSession } from '../session.js';
import { ROLES } from '../../../src/domain/roles.js';
import type { MemberView, Role } from '../types.js';

export function MembersPage() {
  const t = useT();
  const can = useCan();
  const me = useSession().member;
  const client = useQueryClient();
  const members = useQuery({
    queryKey: ['members'],
    queryFn: () => api<{ members: MemberView[] }>('GET', '/members'),
  });
  const refresh = () => client.invalidateQueries({ queryKey: ['members'] });
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const [link, setLink] = useState<{ email: string; link: string } | undefined>();
  const invite = useMutation({
    mutationFn: () => api<{ email: string; link: string }>('POST', '/members', { email, role }),
    onSuccess: async (answer) => {
      setLink(answer);
      setEmail('');
      await refresh();
    },
  });
  const changeRole = useMutation({
    mutationFn: (v: { id: string; role: Role }) => api('PATCH', `/members/${v.id}`, { role: v.role }),
    onSuccess: refresh,
  });
  const reset = useMutation({
    mutationFn: (id: string) => api<{ email: string; link: string }>('POST', `/members/${id}/reset-link`),
    onSuccess: setLink,
  });
  const owner = can('manage-members');
  return (
    <Stack>
      <Title order={1}>{t('members.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('members.intro')}
      </Text>
      {owner ? (
        <Card withBorder>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              invite.mutate();
            }}
          >
            <Group align="flex-end">
              <TextInput
                label={t('signIn.email')}
                type="email"
                required
                value={email}
                onChange={(e) => setEmail(e.currentTarget.value)}
                style={{ flex: 1 }}
                data-testid="invite-email"
              />
              <Select
                label={t('members.role')}
                value={role}
                allowDeselect={false}
                onChange={(v) => setRole(v ?? 'developer')}
                data={ROLES.map((r) => ({ value: r, label: t(`role.${r}`) }))}
                data-testid="invite-role"
              />
              <Button type="submit" loading={invite.isPending} data-testid="invite">
                {t('members.invite')}
              </Button>
            </Group>
          </form>
          <ProblemAlert error={invite.error} />
        </Card>
      ) : null}
      {link ? (
        <Alert color="teal" title={t('members.linkFor', { email: link.email })} data-testid="one-time-link">
          <Text size="sm" mb="xs">
            {t('members.linkNote')}
          </Text>
          <CopyValue value={link.link} label={t('members.link')} testId="invite-link" />
        </Alert>
      ) : null}
      <ProblemAlert error={changeRole.error ?? reset.error} />
      {!members.data ? (
        <Loading />
      ) : (
        <Table.ScrollContainer minWidth={760}>
          <Table striped data-testid="members-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t('signIn.email')}</Table.Th>
                <Table.Th>{t('members.name')}</Table.Th>
                <Table.Th>{t('members.role')}</Table.Th>
                <Table.Th>{t('members.lastSignIn')}</Table.Th>
                <Table.Th>{t('members.status')}</Table.Th>
                {owner ? <Table.Th>{t('members.actions')}</Table.Th> : null}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {members.data.members.map((m) => (
                <Table.Tr key={m.member_id}>
                  <Table.Td>{m.email}</Table.Td>
                  <Table.Td>{m.name || '—'}</Table.Td>
                  <Table.Td>
                    {owner && m.member_id !== me.member_id ? (
                      <Select
                        aria-label={t('members.roleOf', { email: m.email })}
                        size="xs"
                        miw="9rem"
                        value={m.role}
                        allowDeselect={false}
                        onChange={(v) => v && changeRole.mutate({ id: m.member_id, role: v })}
                        data={ROLES.map((r) => ({ value: r, label: t(`role.${r}`) }))}
                      />
                    ) : (
                      t(`role.${m.role}`)
                    )}
                  </Table.Td>
                  <Table.Td>
                    {m.last_sign_in_at ? <Time value={m.last_sign_in_at} /> : t('common.never')}
                  </Table.Td>
                  <Table.Td>
                    {m.locked ? (
                      <Badge color="red">{t('members.locked')}</Badge>
                    ) : m.active ? (
                      <Badge color="teal">{t('members.active')}</Badge>
                    ) : (
                      <Badge color="yellow">{t('members.invited')}</Badge>
                    )}
                  </Table.Td>
                  {owner ? (
                    <Table.Td>
                      <Group gap="xs" wrap="nowrap">
                        <Button size="compact-sm" variant="light" onClick={() => reset.mutate(m.member_id)}>
                          {t('members.resetLink')}
                        </Button>
                        {m.member_id !== me.member_id ? (
                          <ConfirmButton
                            label={t('members.remove')}
                            title={t('members.removeTitle', { email: m.email })}
                            body={<Text size="sm">{t('members.removeBody')}</Text>}
                            confirmLabel={t('members.removeConfirm')}
                            onConfirm={async () => {
                              await api('DELETE', `/members/${m.member_id}`);
                              await refresh();
                            }}
                          />
                        ) : null}
                      </Group>
                    </Table.Td>
                  ) : null}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
