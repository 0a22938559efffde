import { Button, Checkbox, Code, Group, NumberInput, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useState } from 'react';
import { api } from '../api.js';
import type { MessageKey } from '../i18n/en.js';
import { useT } from '../i18n/locale.js';
import type { EndpointList, EndpointView } from '../types.js';
import { ProblemAlert } from './common.js';

export interface AddedEndpoint {
  endpoint: EndpointView;
  secret: string;
}

/**
 * An endpoint's settings: its URL, what it is for, the notification types it receives (none ticked: every
 * type) and its own rate limit. Adds an endpoint, or changes `editing`.
 */
export function EndpointForm(props: {
  rules: Pick<EndpointList, 'event_types' | 'limits'>;
  editing?: EndpointView;
  onAdded?: (added: AddedEndpoint) => void;
  onSaved?: (endpoint: EndpointView) => void;
  onCancel: () => void;
}) {
  const t = useT();
  const { editing, rules } = props;
  const [url, setUrl] = useState(editing?.url ?? '');
  const [description, setDescription] = useState(editing?.description ?? '');
  const [types, setTypes] = useState<string[]>(editing?.event_types ?? []);
  const [rate, setRate] = useState<number | string>(editing?.rate_limit_per_second ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    const settings = {
      url: url.trim(),
      description: description.trim(),
      // In the catalogue's order, whatever order they were ticked in.
      event_types: rules.event_types.filter((type) => types.includes(type)),
      rate_limit_per_second: typeof rate === 'number' ? rate : null,
    };
    try {
      if (editing) {
        const { endpoint } = await api<{ endpoint: EndpointView }>(
          'PATCH',
          `/webhook/endpoints/${editing.id}`,
          settings,
        );
        props.onSaved?.(endpoint);
      } else {
        const { rate_limit_per_second, ...rest } = settings;
        props.onAdded?.(
          await api<AddedEndpoint>('POST', '/webhook/endpoints', {
            ...rest,
            ...(rate_limit_per_second === null ? {} : { rate_limit_per_second }),
          }),
        );
      }
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
      data-testid="endpoint-form"
    >
      <Stack>
        <TextInput
          label={t('webhook.url')}
          placeholder="https://example.com/mds-webhooks"
          type="url"
          required
          value={url}
          onChange={(e) => setUrl(e.currentTarget.value)}
          data-testid="endpoint-url"
        />
        <Textarea
          label={t('endpoints.description')}
          description={t('endpoints.descriptionHint')}
          maxLength={rules.limits.description_length}
          autosize
          minRows={1}
          value={description}
          onChange={(e) => setDescription(e.currentTarget.value)}
          data-testid="endpoint-description"
        />
        <Checkbox.Group
          label={t('endpoints.eventTypes')}
          description={types.length === 0 ? t('endpoints.allTypes') : t('endpoints.someTypes')}
          value={types}
          onChange={setTypes}
        >
          <Stack gap="xs" mt="xs">
            {rules.event_types.map((type) => (
              <Checkbox
                key={type}
                value={type}
                data-testid={`event-type-${type}`}
                label={
                  <Text size="sm" span>
                    <Code>{type}</Code> {t(`catalogue.${type}` as MessageKey)}
                  </Text>
                }
              />
            ))}
          </Stack>
        </Checkbox.Group>
        <NumberInput
          label={t('endpoints.rateLimit')}
          description={t('endpoints.rateLimitHint', { max: rules.limits.rate_limit_per_second })}
          min={1}
          max={rules.limits.rate_limit_per_second}
          allowDecimal={false}
          allowNegative={false}
          value={rate}
          onChange={setRate}
          data-testid="endpoint-rate-limit"
        />
        <ProblemAlert error={error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={props.onCancel}>
            {t('common.cancel')}
          </Button>
          <Button type="submit" loading={busy} data-testid="save-endpoint">
            {editing ? t('common.save') : t('endpoints.add')}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
