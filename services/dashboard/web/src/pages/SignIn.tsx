import { Button, Center, Group, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { api } from '../api.js';
import { Loading, ProblemAlert } from '../components/common.js';
import { LanguageSwitch } from '../components/Shell.js';
import { useT } from '../i18n/locale.js';
import { useSessionQuery, useSetSession } from '../session.js';
import type { SessionView } from '../types.js';

export function AuthFrame({ title, children }: { title: string; children: React.ReactNode }) {
  const t = useT();
  return (
    <Center mih="100vh" p="md" component="main">
      <Paper withBorder shadow="sm" p="xl" w={420} maw="100%">
        <Stack>
          <Group justify="space-between">
            <Text fw={600}>{t('app.title')}</Text>
            <LanguageSwitch />
          </Group>
          <Title order={1} size="h3">
            {title}
          </Title>
          {children}
        </Stack>
      </Paper>
    </Center>
  );
}

export function SignInPage() {
  const t = useT();
  const session = useSessionQuery();
  const setSession = useSetSession();
  const navigate = useNavigate();
  const from = (useLocation().state as { from?: string } | null)?.from ?? '/';
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useMutation({
    mutationFn: () => api<SessionView>('POST', '/session', { email, password }),
    onSuccess: (s) => {
      setSession(s);
      void navigate(from.startsWith('/sign-in') ? '/' : from, { replace: true });
    },
  });
  if (session.isPending) return <Loading />;
  if (session.data) return <Navigate to={from} replace />;
  return (
    <AuthFrame title={t('signIn.title')}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          signIn.mutate();
        }}
      >
        <Stack>
          <TextInput
            label={t('signIn.email')}
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
            data-testid="email"
          />
          <PasswordInput
            label={t('signIn.password')}
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            data-testid="password"
          />
          <ProblemAlert error={signIn.error} />
          <Button type="submit" loading={signIn.isPending} data-testid="sign-in">
            {t('signIn.submit')}
          </Button>
          <Text size="sm" c="dimmed">
            {t('signIn.forgot')}
          </Text>
        </Stack>
      </form>
    </AuthFrame>
  );
}
