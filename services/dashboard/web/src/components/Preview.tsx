import { Box, Paper, Stack, Text } from '@mantine/core';
import { useT } from '../i18n/locale.js';

export interface Draft {
  text: string;
  buttons: { text: string; url: string }[];
}

/** The longest text each messenger takes (the gateway refuses longer ones). */
export const TEXT_LIMITS = { telegram: 4096, max: 4000 } as const;

/**
 * How a message looks in each messenger as the senders send it: the text, then each link button on its own
 * row (Telegram draws them under the bubble, MAX inside it).
 */
export function MessengerPreview({ messenger, draft }: { messenger: 'telegram' | 'max'; draft: Draft }) {
  const t = useT();
  const over = draft.text.length > TEXT_LIMITS[messenger];
  const buttons = draft.buttons.filter((b) => b.text);
  const telegram = messenger === 'telegram';
  const button = (b: { text: string; url: string }, i: number) => (
    <Box
      key={i}
      px="sm"
      py={6}
      style={{
        textAlign: 'center',
        borderRadius: 8,
        background: telegram ? '#e8eef6' : '#ffffff',
        border: telegram ? 'none' : '1px solid #c5cbe0',
        color: telegram ? '#1f4e79' : '#3b2fa0',
        fontSize: 14,
      }}
      title={b.url}
    >
      {b.text} ↗
    </Box>
  );
  return (
    <Paper
      withBorder
      p="sm"
      radius="md"
      bg={telegram ? '#dfe8d3' : '#eef0fa'}
      data-testid={`preview-${messenger}`}
      aria-label={t('send.previewOf', { messenger: telegram ? 'Telegram' : 'MAX' })}
    >
      <Text size="xs" fw={600} mb={6} c="dark.6">
        {telegram ? 'Telegram' : 'MAX'}
      </Text>
      <Stack gap={4} maw={340}>
        <Paper p="sm" radius="lg" bg="white" shadow="xs">
          <Text size="sm" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }} c="dark.9">
            {draft.text || t('send.previewEmpty')}
          </Text>
          {!telegram && buttons.length ? (
            <Stack gap={4} mt="xs">
              {buttons.map(button)}
            </Stack>
          ) : null}
        </Paper>
        {telegram && buttons.length ? <Stack gap={4}>{buttons.map(button)}</Stack> : null}
      </Stack>
      <Text size="xs" mt={6} c={over ? 'red.8' : 'dark.6'}>
        {t('send.length', { length: draft.text.length, limit: TEXT_LIMITS[messenger] })}
      </Text>
    </Paper>
  );
}
