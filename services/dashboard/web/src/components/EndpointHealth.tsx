import { Anchor, Badge, Group, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { useT } from '../i18n/locale.js';
import type { EndpointWithHealth } from '../types.js';
import { Time } from './common.js';

/** A small figure with its label above it. */
export function Figure({ label, children, testId }: { label: string; children: ReactNode; testId?: string }) {
  return (
    <Stack gap={2} style={{ minWidth: 0 }}>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text size="sm" data-testid={testId} style={{ overflowWrap: 'anywhere' }}>
        {children}
      </Text>
    </Stack>
  );
}

/** Whether an endpoint is on, off, or turned off by the dispatcher because it kept failing. */
export function EndpointStateBadges({ endpoint }: { endpoint: EndpointWithHealth }) {
  const t = useT();
  return (
    <Group gap={4} justify="flex-end">
      {endpoint.enabled ? (
        <Badge color="teal" variant="light">
          {t('endpoints.on')}
        </Badge>
      ) : (
        <Badge color="red" variant="light" data-testid="endpoint-off">
          {t('endpoints.off')}
        </Badge>
      )}
      {endpoint.disabled_automatically ? (
        <Badge color="red.9" variant="filled" data-testid="disabled-automatically">
          {t('endpoints.automatically')}
        </Badge>
      ) : null}
    </Group>
  );
}

/**
 * How an endpoint has fared over the last 24 hours (from the endpoints API, which works it out once for both
 * pages): its success rate, its attempts (a link to them on the deliveries page) and its latest failure.
 */
export function HealthFigures({ endpoint }: { endpoint: EndpointWithHealth }) {
  const t = useT();
  const { health } = endpoint;
  const failure = health.last_failure;
  return (
    <>
      <Figure label={t('endpoints.successRate')} testId="success-rate">
        {health.success_rate_24h === null ? '—' : t.percent(health.success_rate_24h)}
      </Figure>
      <Figure label={t('endpoints.attempts24h')}>
        <Anchor component={Link} to={`/deliveries?endpoint=${endpoint.id}`} data-testid="endpoint-attempts">
          {t('endpoints.attemptsLink', { count: health.attempts_24h })}
        </Anchor>
      </Figure>
      <Figure label={t('endpoints.lastFailure')} testId="last-failure">
        {failure ? (
          <>
            <Time value={failure.at} />
            {` · ${failure.error ?? (failure.status_code ? `HTTP ${failure.status_code}` : failure.outcome)}`}
          </>
        ) : (
          t('common.never')
        )}
      </Figure>
    </>
  );
}
