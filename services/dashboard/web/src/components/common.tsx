import {
  Alert,
  Badge,
  Button,
  Code,
  CopyButton,
  Group,
  List,
  Loader,
  Modal,
  Stack,
  Text,
  Tooltip,
  darken,
  luminance,
  useMantineTheme,
  type MantineTheme,
} from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { ApiError } from '../api.js';
import { useT } from '../i18n/locale.js';
import { en, type MessageKey } from '../i18n/en.js';

/** A refused or failed call, in the person's language, with the server's own detail underneath. */
export function ProblemAlert({ error, title }: { error: unknown; title?: string }) {
  const t = useT();
  if (!error) return null;
  const problem = error instanceof ApiError ? error : undefined;
  const known = problem && `problem.${problem.code}`;
  const heading = title ?? (known && knownKey(known) ? t(known) : t('problem.generic'));
  return (
    <Alert color="red" title={heading} role="alert" data-testid="problem">
      <Stack gap={4}>
        {problem?.detail ? <Text size="sm">{problem.detail}</Text> : null}
        {problem?.errors.length ? (
          <List size="sm">
            {problem.errors.map((e) => (
              <List.Item key={e.pointer + e.detail}>
                <Code>{e.pointer.replace(/^#\//, '')}</Code> {e.detail}
              </List.Item>
            ))}
          </List>
        ) : null}
        {problem ? (
          <Text size="xs" c="dimmed">
            {problem.status} {problem.code}
          </Text>
        ) : (
          <Text size="sm">{String((error as Error).message ?? error)}</Text>
        )}
      </Stack>
    </Alert>
  );
}

/** Whether the catalogue has a message for this key (problem codes and states not listed show as they are). */
const knownKey = (key: string): key is MessageKey => key in en;

export function Loading() {
  const t = useT();
  return (
    <Group gap="xs" role="status">
      <Loader size="sm" />
      <Text size="sm">{t('common.loading')}</Text>
    </Group>
  );
}

/** A secret or long value with a copy button. */
export function CopyValue({ value, label, testId }: { value: string; label: string; testId?: string }) {
  const t = useT();
  return (
    <Group gap="xs" wrap="nowrap">
      <Code
        block
        style={{ flex: 1, wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}
        data-testid={testId}
        aria-label={label}
      >
        {value}
      </Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button
            variant="light"
            color={copied ? 'teal' : 'blue'}
            onClick={copy}
            aria-label={`${t('common.copy')}: ${label}`}
          >
            {copied ? t('common.copied') : t('common.copy')}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}

/**
 * The fill of a theme colour darkened until white text on it keeps WCAG AA (4.5:1): orange, teal and green's
 * filled shades are too light for it.
 */
function readableFill(theme: MantineTheme, color: string): string {
  const shades = theme.colors[color];
  if (!shades) return color;
  let fill = shades[8];
  // 1.05 / (L + 0.05) >= 4.5 holds for a luminance up to 0.183.
  for (let i = 0; i < 10 && luminance(fill) > 0.18; i++) fill = darken(fill, 0.1);
  return fill;
}

/** A button that asks first, in a dialog, and then does it. */
export function ConfirmButton(props: {
  label: string;
  title: string;
  body: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  color?: string;
  disabled?: boolean;
  testId?: string;
  variant?: string;
  size?: string;
}) {
  const t = useT();
  const theme = useMantineTheme();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  return (
    <>
      <Button
        variant={props.variant ?? 'light'}
        color={props.color ?? 'red'}
        size={props.size}
        disabled={props.disabled}
        onClick={() => {
          setError(undefined);
          setOpen(true);
        }}
        data-testid={props.testId}
      >
        {props.label}
      </Button>
      <Modal
        closeButtonProps={{ 'aria-label': t('common.close') }}
        opened={open}
        onClose={() => setOpen(false)}
        title={props.title}
        centered
      >
        <Stack>
          {props.body}
          <ProblemAlert error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              {t('common.cancel')}
            </Button>
            <Button
              color={readableFill(theme, props.color ?? 'red')}
              loading={busy}
              data-testid={props.testId ? `${props.testId}-confirm` : undefined}
              onClick={async () => {
                setBusy(true);
                try {
                  await props.onConfirm();
                  setOpen(false);
                } catch (e) {
                  setError(e);
                } finally {
                  setBusy(false);
                }
              }}
            >
              {props.confirmLabel}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

const STATE_COLORS: Record<string, string> = {
  new: 'blue',
  sent: 'teal',
  failed: 'red',
  pending: 'yellow',
  delivered: 'teal',
  changed: 'teal',
  rejected: 'red',
  checked: 'teal',
};

export function StateBadge({ state, testId }: { state: string; testId?: string }) {
  const t = useT();
  const key = `state.${state}`;
  return (
    <Badge color={STATE_COLORS[state] ?? 'gray'} variant="light" data-testid={testId}>
      {knownKey(key) ? t(key) : state}
    </Badge>
  );
}

/** A time shown in the person's locale, with the exact instant on hover. */
export function Time({ value }: { value: string | null | undefined }) {
  const t = useT();
  if (!value) return <Text span>—</Text>;
  return (
    <Tooltip label={new Date(value).toISOString()}>
      <time dateTime={value}>{t.date(value)}</time>
    </Tooltip>
  );
}

export function Disallowed() {
  const t = useT();
  return (
    <Text size="sm" c="dimmed">
      {t('common.readOnly')}
    </Text>
  );
}
