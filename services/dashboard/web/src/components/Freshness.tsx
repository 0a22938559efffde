import { Alert } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api } from '../api.js';
import { useT } from '../i18n/locale.js';
import { useSession } from '../session.js';

/** Data older than this is said to be behind on every page. */
const BEHIND_AFTER_SECONDS = 30;

/**
 * Every page's warning that the read models lag: the whole consumer group's, whichever replica serves the
 * page, so that a page that shows nothing new says why instead of looking up to date.
 */
export function FreshnessBanner() {
  const t = useT();
  const session = useSession();
  const freshness = useQuery({
    queryKey: ['freshness'],
    queryFn: () => api<{ behind_seconds: number; records_behind: number }>('GET', '/freshness'),
    refetchInterval: Math.max(session.live_refresh_ms, 2_000),
  });
  const behind = freshness.data?.behind_seconds ?? 0;
  if (behind <= BEHIND_AFTER_SECONDS) return null;
  return (
    <Alert color="yellow" mb="md" role="status" data-testid="freshness-banner">
      {t('freshness.behind', { behind: t.duration(behind) })}
    </Alert>
  );
}
