import { ActionIcon, Button, Group, Stack, Text, TextInput } from '@mantine/core';
import { useT } from '../i18n/locale.js';

/** One row of a request's `metadata` as the form edits it. */
export interface MetadataRow {
  key: string;
  value: string;
}

const MAX_KEYS = 20;

/** The rows as the API takes them; undefined for none (the request then carries no `metadata`). */
export function metadataOfRows(rows: readonly MetadataRow[]): Record<string, string> | undefined {
  return rows.length ? Object.fromEntries(rows.map((r) => [r.key, r.value])) : undefined;
}

/** Key/value rows of a request's metadata; the gateway checks them and names the row at fault. */
export function MetadataRows({
  rows,
  onChange,
}: {
  rows: MetadataRow[];
  onChange: (rows: MetadataRow[]) => void;
}) {
  const t = useT();
  const set = (i: number, patch: Partial<MetadataRow>) =>
    onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <Stack gap="xs">
      <div>
        <Text size="sm" fw={500}>
          {t('send.metadata')}
        </Text>
        <Text size="xs" c="dimmed">
          {t('send.metadataHint')}
        </Text>
      </div>
      {rows.map((r, i) => (
        <Group key={i} align="flex-end" wrap="nowrap">
          <TextInput
            label={t('send.metadataKey', { n: i + 1 })}
            required
            maxLength={40}
            pattern="[A-Za-z0-9_.\-]{1,40}"
            value={r.key}
            onChange={(e) => set(i, { key: e.currentTarget.value })}
            style={{ flex: 1 }}
            data-testid={`metadata-key-${i}`}
          />
          <TextInput
            label={t('send.metadataValue', { n: i + 1 })}
            maxLength={500}
            value={r.value}
            onChange={(e) => set(i, { value: e.currentTarget.value })}
            style={{ flex: 2 }}
            data-testid={`metadata-value-${i}`}
          />
          <ActionIcon
            variant="light"
            color="red"
            size="lg"
            aria-label={t('send.removeMetadata', { n: i + 1 })}
            onClick={() => onChange(rows.filter((_, j) => j !== i))}
          >
            ×
          </ActionIcon>
        </Group>
      ))}
      <Group>
        <Button
          variant="light"
          size="xs"
          disabled={rows.length >= MAX_KEYS}
          onClick={() => onChange([...rows, { key: '', value: '' }])}
          data-testid="add-metadata"
        >
          {t('send.addMetadata')}
        </Button>
      </Group>
    </Stack>
  );
}
