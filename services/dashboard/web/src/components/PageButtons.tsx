import { Button, Group } from '@mantine/core';
import { useT } from '../i18n/locale.js';

/**
 * "Newer" and "Older" over a list read by cursor: `cursors` are the pages gone through (the last one is shown;
 * none: the first page), `next` the cursor the shown page gave for the one after it.
 */
export function PageButtons(o: {
  cursors: string[];
  setCursors: (cursors: string[]) => void;
  next: string | null | undefined;
  olderTestId?: string;
}) {
  const t = useT();
  const next = o.next;
  return (
    <Group gap="xs">
      <Button
        variant="default"
        disabled={o.cursors.length === 0}
        onClick={() => o.setCursors(o.cursors.slice(0, -1))}
      >
        {t('messages.newer')}
      </Button>
      <Button
        variant="default"
        disabled={!next}
        onClick={() => next && o.setCursors([...o.cursors, next])}
        data-testid={o.olderTestId}
      >
        {t('messages.older')}
      </Button>
    </Group>
  );
}
