import { Badge, Radio, Stack, Text } from '@mantine/core';
import { useState } from 'react';
import { api } from '../api.js';
import { useT } from '../i18n/locale.js';
import type { KeyView } from '../types.js';
import { ConfirmButton } from './common.js';

/** The overlaps a roll offers, in seconds: the old key stops now, in 1 hour, 24 hours or 7 days. */
const OVERLAPS = [0, 3_600, 86_400, 604_800] as const;

/** A key rolled or created: the key itself, shown this once, and (rolled) when the old one stops. */
export interface ShownKey {
  key_id: string;
  api_key: string;
  prefix: string;
  label: string;
  scopes: string[];
  rolled_from?: string;
  old_key_expires_at?: string | null;
  /** The rolled key's prefix, to say which one keeps working until when. */
  old_prefix?: string;
}

/** How a key is named to a person: its label in quotes, or its prefix when it has none. */
export function useKeyName() {
  const t = useT();
  return (k: Pick<KeyView, 'label' | 'prefix'>) => t('keys.named', { label: k.label || `${k.prefix}…` });
}

/** Whether a key still works now: not revoked, and not past the end of a roll's overlap. */
export const keyWorks = (k: KeyView, now = Date.now()) =>
  !k.revoked_at && (!k.expires_at || Date.parse(k.expires_at) > now);

/** Active, working until a time (a rolled key), expired, or revoked. */
export function KeyStatus({ k }: { k: KeyView }) {
  const t = useT();
  if (k.revoked_at) return <Badge color="gray">{t('keys.revoked')}</Badge>;
  if (k.expires_at && !keyWorks(k)) return <Badge color="gray">{t('keys.expired')}</Badge>;
  if (k.expires_at)
    return (
      <Stack gap={2} align="flex-start" data-testid={`key-expires-${k.key_id}`}>
        <Badge color="orange" variant="light">
          {t('keys.expiring')}
        </Badge>
        <Text size="xs">{t('keys.expiresAt', { time: t.date(k.expires_at) })}</Text>
      </Stack>
    );
  return <Badge color="teal">{t('keys.active')}</Badge>;
}

/** Roll: the owner chooses how long the old key keeps working, then sees the new key once. */
export function RollKeyButton({ k, onRolled }: { k: KeyView; onRolled: (key: ShownKey) => Promise<void> }) {
  const t = useT();
  const name = useKeyName();
  const [overlap, setOverlap] = useState<string>('3600');
  return (
    <ConfirmButton
      label={t('keys.roll')}
      title={t('keys.rollTitle', { label: name(k) })}
      color="blue"
      size="xs"
      testId={`roll-${k.key_id}`}
      body={
        <Stack gap="sm">
          <Text size="sm">{t('keys.rollBody', { prefix: k.prefix })}</Text>
          <Radio.Group
            label={t('keys.rollOverlap')}
            value={overlap}
            onChange={setOverlap}
            data-testid={`roll-overlap-${k.key_id}`}
          >
            <Stack gap="xs" mt="xs">
              {OVERLAPS.map((seconds) => (
                <Radio
                  key={seconds}
                  value={String(seconds)}
                  label={t(`keys.overlap.${seconds}`)}
                  data-testid={`overlap-${seconds}`}
                />
              ))}
            </Stack>
          </Radio.Group>
        </Stack>
      }
      confirmLabel={t('keys.rollConfirm')}
      onConfirm={async () => {
        const rolled = await api<ShownKey>('POST', `/keys/${k.key_id}/roll`, {
          expires_in_seconds: Number(overlap),
        });
        await onRolled({ ...rolled, old_prefix: k.prefix });
      }}
    />
  );
}

/** Revoke, naming the key by its label (and its prefix): it stops at every gateway within a second. */
export function RevokeKeyButton({ k, onRevoked }: { k: KeyView; onRevoked: () => Promise<void> }) {
  const t = useT();
  const name = useKeyName();
  return (
    <ConfirmButton
      label={t('keys.revoke')}
      size="xs"
      title={t('keys.revokeTitle', { label: name(k) })}
      body={<Text size="sm">{t('keys.revokeBody', { prefix: k.prefix })}</Text>}
      confirmLabel={t('keys.revokeConfirm')}
      testId={`revoke-${k.key_id}`}
      onConfirm={async () => {
        await api('DELETE', `/keys/${k.key_id}`);
        await onRevoked();
      }}
    />
  );
}
