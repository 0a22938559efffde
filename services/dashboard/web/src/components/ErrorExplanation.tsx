import { Code, Stack, Text } from '@mantine/core';
import { explainError, type ErrorExplanation } from '@mds/contracts/error-catalogue';
import { messengerLabel as labelOf } from '@mds/contracts/messengers';
import { useLocale, useT } from '../i18n/locale.js';

/** A messenger as people know it (its label in the catalogue), not as the API names it. */
export const messengerLabel = (messenger: string | null | undefined): string =>
  messenger ? labelOf(messenger) : '—';

/** The catalogue's explanation of an error code in the app's language (@mds/contracts/error-catalogue). */
export function useExplainError(): (code: string) => ErrorExplanation | undefined {
  const { locale } = useLocale();
  return (code) => explainError(code, locale);
}

/** An error in a table cell: its title in words, the code beneath (a code this build does not know: as it is). */
export function ErrorSummary({ code }: { code: string }) {
  const explain = useExplainError();
  const known = explain(code);
  return (
    <Stack gap={0}>
      {known ? (
        <Text size="sm" c="red.9" fw={500}>
          {known.title}
        </Text>
      ) : null}
      <Text size="xs" c="dimmed" ff="monospace" style={{ overflowWrap: 'anywhere' }}>
        {code}
      </Text>
    </Stack>
  );
}

/** An error explained whole: its title, what happened and what to do, and its code. */
export function ErrorDetails({ code, testId }: { code: string; testId?: string }) {
  const t = useT();
  const known = useExplainError()(code);
  return (
    <Stack gap={4} data-testid={testId}>
      <Text size="sm" fw={600} c="red.9">
        {known?.title ?? code}
      </Text>
      {known ? (
        <>
          <Text size="sm">
            <Text span fw={500}>
              {t('log.error.what')}:
            </Text>{' '}
            {known.meaning}
          </Text>
          <Text size="sm">
            <Text span fw={500}>
              {t('log.error.todo')}:
            </Text>{' '}
            {known.action}
          </Text>
        </>
      ) : null}
      <Text size="xs" c="dimmed">
        {t('log.error.code')}: <Code>{code}</Code>
      </Text>
    </Stack>
  );
}
