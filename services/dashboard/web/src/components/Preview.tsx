import { Box, Paper, Stack, Text } from '@mantine/core';
import { messengers, type MessengerDefinition } from '@mds/contracts/messengers';
import { useT } from '../i18n/locale.js';

export interface Draft {
  text: string;
  buttons: { text: string; url: string }[];
}

/** The chat's and the buttons' colours of the catalogue's messengers, in its order; others get the last. */
const PALETTES = [
  { chat: '#dfe8d3', accent: '#1f4e79' },
  { chat: '#eef0fa', accent: '#3b2fa0' },
  { chat: '#f1f3f5', accent: '#343a40' },
] as const;

/**
 * How a message looks in a messenger as the senders send it: the text, then each link button on its own row,
 * under the bubble or inside it as the messenger draws them (the catalogue's `buttonsBelowBubble`). The text's
 * limit is the messenger's (the gateway refuses longer ones).
 */
export function MessengerPreview({ messenger, draft }: { messenger: MessengerDefinition; draft: Draft }) {
  const t = useT();
  const over = draft.text.length > messenger.textLimit;
  const buttons = draft.buttons.filter((b) => b.text);
  const below = messenger.buttonsBelowBubble ?? false;
  const index = messengers().findIndex((m) => m.name === messenger.name);
  const palette = PALETTES[Math.min(index < 0 ? Infinity : index, PALETTES.length - 1)]!;
  const button = (b: { text: string; url: string }, i: number) => (
    <Box
      key={i}
      px="sm"
      py={6}
      style={{
        textAlign: 'center',
        borderRadius: 8,
        background: below ? '#e8eef6' : '#ffffff',
        border: below ? 'none' : '1px solid #c5cbe0',
        color: palette.accent,
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
      bg={palette.chat}
      data-testid={`preview-${messenger.name}`}
      aria-label={t('send.previewOf', { messenger: messenger.label })}
    >
      <Text size="xs" fw={600} mb={6} c="dark.6">
        {messenger.label}
      </Text>
      <Stack gap={4} maw={340}>
        <Paper p="sm" radius="lg" bg="white" shadow="xs">
          <Text size="sm" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }} c="dark.9">
            {draft.text || t('send.previewEmpty')}
          </Text>
          {!below && buttons.length ? (
            <Stack gap={4} mt="xs">
              {buttons.map(button)}
            </Stack>
          ) : null}
        </Paper>
        {below && buttons.length ? <Stack gap={4}>{buttons.map(button)}</Stack> : null}
      </Stack>
      <Text size="xs" mt={6} c={over ? 'red.8' : 'dark.6'}>
        {t('send.length', { length: draft.text.length, limit: messenger.textLimit })}
      </Text>
    </Paper>
  );
}
