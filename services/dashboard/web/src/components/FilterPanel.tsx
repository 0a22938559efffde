import { Badge, Button, Card, Collapse, Group } from '@mantine/core';
import { useDisclosure, useMediaQuery } from '@mantine/hooks';
import type { FormEvent, ReactNode } from 'react';
import { useT } from '../i18n/locale.js';

/**
 * A page's filters as one form: on a wide screen shown in full; on a small one (under Mantine's `sm`, 48em)
 * collapsed behind one "Filters" control that says how many are set, so the first row of results is on the
 * first screen.
 */
export function FilterPanel(o: {
  /** Names the form for assistive technology (the page's "search" label). */
  label: string;
  /** How many filters are set now (shown on the collapsed control). */
  active: number;
  onSubmit: () => void;
  children: ReactNode;
}) {
  const t = useT();
  const small = useMediaQuery('(max-width: 48em)', false, { getInitialValueInEffect: false });
  const [open, { toggle }] = useDisclosure(false);
  const form = (
    <form
      aria-label={o.label}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        o.onSubmit();
      }}
    >
      {o.children}
    </form>
  );
  if (!small) return <Card withBorder>{form}</Card>;
  return (
    <Card withBorder padding="sm">
      <Group justify="space-between" wrap="nowrap">
        <Button
          variant="default"
          onClick={toggle}
          aria-expanded={open}
          aria-controls="filter-panel"
          data-testid="filters-toggle"
          rightSection={
            o.active > 0 ? (
              <Badge size="sm" circle aria-label={t('filters.active', { count: o.active })}>
                {o.active}
              </Badge>
            ) : undefined
          }
        >
          {open ? t('filters.hide') : t('filters.show')}
        </Button>
      </Group>
      <Collapse expanded={open} id="filter-panel" mt={open ? 'sm' : 0}>
        {form}
      </Collapse>
    </Card>
  );
}
