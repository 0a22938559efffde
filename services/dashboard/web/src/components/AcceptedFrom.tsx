import { Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api } from '../api.js';
import { useT } from '../i18n/locale.js';
import type { MemberView } from '../types.js';

/** What the gateway records as the key of a request the dashboard made for a member (see the gateway). */
const DASHBOARD = 'dashboard:';

/**
 * Who made an accepted request, said as a person reads it: a member who sent it from the dashboard, by name, or
 * the API key by its label and prefix (the id when the key is gone).
 */
export function AcceptedFrom({ keyId }: { keyId: string }) {
  const t = useT();
  const fromDashboard = keyId.startsWith(DASHBOARD);
  const members = useQuery({
    queryKey: ['members'],
    queryFn: () => api<{ members: MemberView[] }>('GET', '/members'),
    enabled: fromDashboard,
  });
  const keys = useQuery({
    queryKey: ['keys'],
    queryFn: () => api<{ keys: { key_id: string; label: string; prefix: string }[] }>('GET', '/keys'),
    enabled: !fromDashboard,
  });
  if (fromDashboard) {
    const memberId = keyId.slice(DASHBOARD.length);
    const member = members.data?.members.find((m) => m.member_id === memberId);
    return (
      <Text size="sm" data-testid="accepted-from">
        {t('timeline.acceptedFromDashboard', {
          name: member ? member.name || member.email : t('audit.formerMember'),
        })}
      </Text>
    );
  }
  const key = keys.data?.keys.find((k) => k.key_id === keyId);
  return (
    <Text size="sm" data-testid="accepted-from">
      {t('timeline.acceptedBody', { key: key ? `${key.label} (${key.prefix}…)` : keyId })}
    </Text>
  );
}
