import {
  AppShell,
  Box,
  Burger,
  Button,
  Group,
  NavLink,
  SegmentedControl,
  Stack,
  Text,
  Title,
} from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useIsFetching } from '@tanstack/react-query';
import { useEffect } from 'react';
import { Navigate, NavLink as RouterLink, Outlet, useLocation, useNavigate } from 'react-router';
import { api, whenSignedOut } from '../api.js';
import type { MessageKey } from '../i18n/en.js';
import { LOCALES, useLocale, useT } from '../i18n/locale.js';
import { SessionProvider, useSessionQuery, useSetSession } from '../session.js';
import type { Permission } from '../types.js';
import { Loading, ProblemAlert } from './common.js';
import { FreshnessBanner } from './Freshness.js';

const NAV: { to: string; label: MessageKey; end?: boolean; only?: Permission }[] = [
  { to: '/', label: 'nav.overview', end: true },
  { to: '/messages', label: 'nav.messages' },
  { to: '/send', label: 'nav.send' },
  { to: '/deliveries', label: 'nav.deliveries' },
  { to: '/keys', label: 'nav.keys' },
  { to: '/webhook', label: 'nav.webhook' },
  { to: '/bots', label: 'nav.bots' },
  { to: '/clients', label: 'nav.clients' },
  { to: '/members', label: 'nav.members' },
  { to: '/audit', label: 'nav.audit', only: 'read-audit' },
];

export function LanguageSwitch({ testId = 'language' }: { testId?: string }) {
  const { locale, setLocale } = useLocale();
  const t = useT();
  return (
    <SegmentedControl
      size="xs"
      aria-label={t('common.language')}
      value={locale}
      onChange={(value) => setLocale(value)}
      data={LOCALES.map((l) => ({ value: l, label: l === 'en' ? 'English' : 'Русский' }))}
      data-testid={testId}
    />
  );
}

/** Names the browser tab (and the window, and the bookmark) while the component is shown. */
export function useDocumentTitle(title: string): void {
  useEffect(() => {
    document.title = title;
  }, [title]);
}

/** Every signed-in page: the navigation, the company, the member, and the page itself. */
export function Shell() {
  const t = useT();
  const session = useSessionQuery();
  const setSession = useSetSession();
  const navigate = useNavigate();
  const location = useLocation();
  const [opened, { toggle, close }] = useDisclosure();
  // The page is busy while something it shows is on its first load (not while live data is polled, nor once a
  // first try failed: the page then says what it waits for): assistive technology waits, and so do the browser
  // tests before they look.
  const firstLoads = useIsFetching({
    predicate: (query) => query.state.status === 'pending' && query.state.fetchFailureCount === 0,
  });

  useEffect(() => {
    whenSignedOut(() => {
      setSession(null);
      void navigate('/sign-in', { state: { from: location.pathname + location.search } });
    });
  });
  useEffect(close, [location.pathname, close]);
  // The browser tab names the section, in the app's language.
  const section = NAV.find((item) =>
    item.end ? location.pathname === item.to : location.pathname.startsWith(item.to),
  );
  useDocumentTitle(section ? t('app.pageTitle', { page: t(section.label) }) : t('app.documentTitle'));

  if (session.isPending) return <Loading />;
  if (session.error) return <ProblemAlert error={session.error} />;
  if (!session.data)
    return <Navigate to="/sign-in" replace state={{ from: location.pathname + location.search }} />;
  const { member, company, permissions } = session.data;

  return (
    <SessionProvider session={session.data}>
      <AppShell
        header={{ height: 56 }}
        navbar={{ width: 230, breakpoint: 'sm', collapsed: { mobile: !opened } }}
        padding="md"
      >
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between" wrap="nowrap">
            {/* On a phone the title gives way (wraps) so that sign-out stays whole. */}
            <Group gap="sm" wrap="nowrap" style={{ minWidth: 0 }}>
              <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label={t('nav.menu')} />
              <Title order={2} size="h4" style={{ minWidth: 0, lineHeight: 1.15 }}>
                {t('app.title')}
              </Title>
              <Text size="sm" c="dimmed" data-testid="company-name" visibleFrom="xs">
                {company.name}
              </Text>
            </Group>
            <Group gap="sm" wrap="nowrap">
              {/* On a phone the language switch is in the menu, beside the sections. */}
              <Box visibleFrom="xs">
                <LanguageSwitch />
              </Box>
              <Text size="sm" visibleFrom="md" data-testid="member-email">
                {member.email} · {t(`role.${member.role}`)}
              </Text>
              <Button
                variant="subtle"
                size="compact-sm"
                data-testid="sign-out"
                onClick={async () => {
                  await api('DELETE', '/session');
                  setSession(null);
                  void navigate('/sign-in');
                }}
              >
                {t('nav.signOut')}
              </Button>
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs" aria-label={t('nav.label')}>
          {/* On a phone the header has room for the title only: who is signed in, where, is said here. */}
          <Stack hiddenFrom="xs" pb="xs" gap={4}>
            <Text size="sm" fw={600} style={{ overflowWrap: 'anywhere' }} data-testid="company-name-menu">
              {company.name}
            </Text>
            <Text size="xs" c="dimmed" style={{ overflowWrap: 'anywhere' }}>
              {member.email} · {t(`role.${member.role}`)}
            </Text>
            <LanguageSwitch testId="language-menu" />
          </Stack>
          <Stack gap={2} component="nav">
            {NAV.filter((item) => !item.only || permissions.includes(item.only)).map((item) => (
              <NavLink
                key={item.to}
                component={RouterLink}
                to={item.to}
                end={item.end}
                label={t(item.label)}
                // Filled: white on indigo 8 keeps 4.5:1 when hovered too (the light variant's hover does not).
                variant="filled"
                active={item.end ? location.pathname === item.to : location.pathname.startsWith(item.to)}
              />
            ))}
          </Stack>
        </AppShell.Navbar>
        <AppShell.Main aria-busy={firstLoads > 0 || undefined}>
          <FreshnessBanner />
          <Outlet />
        </AppShell.Main>
      </AppShell>
    </SessionProvider>
  );
}
