import { Badge, Code, Group, Stack, Text } from '@mantine/core';
import { useT } from '../i18n/locale.js';

/** What the dispatcher answers for a test event: the request it sent and the endpoint's answer. */
export interface TestDelivery {
  webhook_id: string;
  request: { url: string; headers: Record<string, string>; body: string };
  response: {
    outcome: 'succeeded' | 'failed' | 'no_response';
    status_code: number | null;
    latency_ms: number;
    excerpt: string;
    error: string | null;
  };
}

export function TestDeliveryResult({ result }: { result: TestDelivery }) {
  const t = useT();
  return (
    <Stack data-testid="test-result" gap="xs">
      <Group gap="xs">
        <Badge color={result.response.outcome === 'succeeded' ? 'teal' : 'red'} data-testid="test-outcome">
          {t(`webhook.outcome.${result.response.outcome}`)}
        </Badge>
        <Text size="sm">
          {t('webhook.testAnswer', {
            status: result.response.status_code ?? '—',
            latency: t.ms(result.response.latency_ms),
          })}
        </Text>
      </Group>
      <Text fw={600} size="sm">
        {t('webhook.request')}
      </Text>
      <Code block tabIndex={0} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
        {`POST ${result.request.url}\n${Object.entries(result.request.headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\n')}\n\n${result.request.body}`}
      </Code>
      <Text fw={600} size="sm">
        {t('webhook.response')}
      </Text>
      <Code
        block
        tabIndex={0}
        data-testid="test-response"
        style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}
      >
        {result.response.error ?? (result.response.excerpt || t('webhook.emptyBody'))}
      </Code>
    </Stack>
  );
}
