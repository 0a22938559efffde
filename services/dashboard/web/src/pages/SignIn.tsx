import { Alert, Button, Center, Group, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { api, ApiError } from '../api.js';
import { Loading, ProblemAlert } from '../components/common.js';
import { PasswordField } from '../components/PasswordField.js';
import { LanguageSwitch, useDocumentTitle } from '../components/Shell.js';
import type { MessageKey } from '../i18n/en.js';
import { useT } from '../i18n/locale.js';
import { useSessionQuery, useSetSession } from '../session.js';
import type { SessionView } from '../types.js';

/** The answers a person can get while signing in or setting a password, each said in words. */
const AUTH_PROBLEMS: Record<string, MessageKey> = {
  invalid_credentials: 'problem.invalid_credentials',
  too_many_attempts: 'problem.too_many_attempts',
  link_invalid: 'problem.link_invalid',
  weak_password: 'problem.weak_password',
  csrf_failed: 'problem.csrf_failed',
};

/**
 * A refused sign-in (or password) said once, in the person's words: no status code, no machine code, and not
 * the server's English sentence beside its translation. Anything else is shown as every page shows it.
 */
export function AuthProblem({ error }: { error: unknown }) {
  const t = useT();
  if (!error) return null;
  const known = error instanceof ApiError ? AUTH_PROBLEMS[error.code] : undefined;
  if (!known) return <ProblemAlert error={error} />;
  return (
    <Alert color="red" role="alert" data-testid="problem">
      <Text size="sm" fw={600}>
        {t(known)}
      </Text>
    </Alert>
  );
}

export function AuthFrame({ title, children }: { title: string; children: React.ReactNode }) {
  const t = useT();
  useDocumentTitle(t('app.pageTitle', { page: title }));
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
          <PasswordField
            label={t('signIn.password')}
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            data-testid="password"
          />
          <AuthProblem error={signIn.error} />
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
