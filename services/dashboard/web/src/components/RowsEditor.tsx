import {
  ActionIcon,
  Button,
  Group,
  Select,
  Stack,
  Text,
  TextInput,
  type SelectProps,
  type TextInputProps,
} from '@mantine/core';

/** One input of a row: which member it edits, how it is labelled and found, and its share of the width. */
export interface RowField<R> {
  name: keyof R & string;
  label: (n: number) => string;
  /** The input of row i is `${testId}-${i}`. */
  testId: string;
  flex: number;
  props?: Omit<TextInputProps, 'label' | 'value' | 'onChange'>;
  /** A choice instead of a text: the row's choices ('' when none is chosen). */
  choices?: (row: R) => { value: string; label: string }[];
  selectProps?: Omit<SelectProps, 'label' | 'value' | 'onChange' | 'data'>;
  /** Members blanked when this one changes (a bot chosen for another messenger). */
  resets?: (keyof R & string)[];
}

/** Rows of a few inputs each (a message's buttons, a request's metadata, a send's fallback): edit, remove, add up to `max`. */
export function RowsEditor<R extends Record<string, string>>(o: {
  title: string;
  hint?: string;
  rows: R[];
  onChange: (rows: R[]) => void;
  fields: RowField<R>[];
  max: number;
  blank: R;
  addLabel: string;
  addTestId: string;
  removeLabel: (n: number) => string;
}) {
  const set = (i: number, f: RowField<R>, value: string) =>
    o.onChange(
      o.rows.map((r, j) =>
        j === i ? { ...r, ...Object.fromEntries((f.resets ?? []).map((k) => [k, ''])), [f.name]: value } : r,
      ),
    );
  return (
    <Stack gap="xs">
      <div>
        <Text size="sm" fw={500}>
          {o.title}
        </Text>
        {o.hint ? (
          <Text size="xs" c="dimmed">
            {o.hint}
          </Text>
        ) : null}
      </div>
      {o.rows.map((r, i) => (
        <Group key={i} align="flex-end" wrap="nowrap">
          {o.fields.map((f) =>
            f.choices ? (
              <Select
                key={f.name}
                {...f.selectProps}
                label={f.label(i + 1)}
                value={r[f.name] || null}
                data={f.choices(r)}
                onChange={(v) => set(i, f, v ?? '')}
                style={{ flex: f.flex, minWidth: 0 }}
                data-testid={`${f.testId}-${i}`}
              />
            ) : (
              <TextInput
                key={f.name}
                {...f.props}
                label={f.label(i + 1)}
                value={r[f.name]}
                onChange={(e) => set(i, f, e.currentTarget.value)}
                style={{ flex: f.flex }}
                data-testid={`${f.testId}-${i}`}
              />
            ),
          )}
          <ActionIcon
            variant="light"
            color="red"
            size="lg"
            aria-label={o.removeLabel(i + 1)}
            onClick={() => o.onChange(o.rows.filter((_, j) => j !== i))}
          >
            ×
          </ActionIcon>
        </Group>
      ))}
      <Group>
        <Button
          variant="light"
          size="xs"
          disabled={o.rows.length >= o.max}
          onClick={() => o.onChange([...o.rows, o.blank])}
          data-testid={o.addTestId}
        >
          {o.addLabel}
        </Button>
      </Group>
    </Stack>
  );
}
