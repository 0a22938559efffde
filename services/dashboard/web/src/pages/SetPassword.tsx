import { Button, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { api } from '../api.js';
import { Loading } from '../components/common.js';
import { PasswordField } from '../components/PasswordField.js';
import { useT } from '../i18n/locale.js';
import { useSetSession } from '../session.js';
import type { SessionView } from '../types.js';
import { AuthFrame, AuthProblem } from './SignIn.js';

/** Where a one-time link (invitation or reset) lands: the token is in the fragment, never sent as a page URL. */
export function SetPasswordPage() {
  const t = useT();
  const token = window.location.hash.replace(/^#/, '');
  const navigate = useNavigate();
  const setSession = useSetSession();
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const link = useQuery({
    queryKey: ['link', token],
    queryFn: () =>
      api<{ purpose: 'invite' | 'reset'; email: string; name: string }>('POST', '/links/peek', { token }),
    enabled: token.length > 0,
    retry: false,
  });
  const save = useMutation({
    mutationFn: () =>
      api<SessionView>('POST', '/links/redeem', { token, password, ...(name ? { name } : {}) }),
    onSuccess: (session) => {
      setSession(session);
      window.history.replaceState(null, '', '/set-password');
      void navigate('/', { replace: true });
    },
  });
  if (!token)
    return (
      <AuthFrame title={t('setPassword.title')}>
        <Text>{t('setPassword.noToken')}</Text>
      </AuthFrame>
    );
  if (link.isPending) return <Loading />;
  if (link.error)
    return (
      <AuthFrame title={t('setPassword.title')}>
        <AuthProblem error={link.error} />
      </AuthFrame>
    );
  const mismatch = repeat.length > 0 && repeat !== password;
  return (
    <AuthFrame title={link.data.purpose === 'invite' ? t('setPassword.welcome') : t('setPassword.title')}>
      <Text size="sm">{t('setPassword.for', { email: link.data.email })}</Text>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!mismatch) save.mutate();
        }}
      >
        <Stack>
          {link.data.purpose === 'invite' ? (
            <TextInput
              label={t('setPassword.name')}
              autoComplete="name"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              data-testid="name"
            />
          ) : null}
          <PasswordField
            label={t('setPassword.password')}
            description={t('setPassword.rules')}
            autoComplete="new-password"
            required
            minLength={12}
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            data-testid="new-password"
          />
          <PasswordField
            label={t('setPassword.repeat')}
            autoComplete="new-password"
            required
            value={repeat}
            onChange={(e) => setRepeat(e.currentTarget.value)}
            error={mismatch ? t('setPassword.mismatch') : undefined}
            data-testid="repeat-password"
          />
          <AuthProblem error={save.error} />
          <Button type="submit" loading={save.isPending} disabled={mismatch} data-testid="save-password">
            {t('setPassword.submit')}
          </Button>
        </Stack>
      </form>
    </AuthFrame>
  );
}
