import { Alert, Button, Group, List, Modal, Stack, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api.js';
import { CopyValue, Disallowed, Loading, ProblemAlert } from '../components/common.js';
import { EndpointCard, endpointName } from '../components/EndpointCard.js';
import { EndpointForm, type AddedEndpoint } from '../components/EndpointForm.js';
import { WebhookCatalogue } from '../components/WebhookCatalogue.js';
import { useT } from '../i18n/locale.js';
import { useCan, useSession } from '../session.js';
import type { EndpointList, EndpointWithHealth } from '../types.js';

/**
 * The notice of an endpoint the dispatcher turned off, written as it would be in an email: what happened, when,
 * and what to do about it.
 */
function DisabledNotice({ endpoint }: { endpoint: EndpointWithHealth }) {
  const t = useT();
  const name = endpointName(endpoint);
  const failure = endpoint.health.last_failure;
  return (
    <Alert color="orange" title={t('endpoints.noticeTitle', { name })} data-testid="disabled-notice">
      <Stack gap="xs">
        <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
          {failure
            ? t('endpoints.noticeWhatWhen', {
                url: endpoint.url,
                at: t.date(failure.at),
                reason: endpoint.disabled_reason ?? '',
              })
            : t('endpoints.noticeWhat', { url: endpoint.url, reason: endpoint.disabled_reason ?? '' })}
        </Text>
        <Text size="sm">{t('endpoints.noticeMeanwhile')}</Text>
        <Text size="sm" fw={600}>
          {t('endpoints.noticeTodo')}
        </Text>
        <List size="sm" type="ordered">
          <List.Item>{t('endpoints.noticeStep1')}</List.Item>
          <List.Item>{t('endpoints.noticeStep2')}</List.Item>
          <List.Item>
            {t('endpoints.noticeStep3')}{' '}
            <Link to={`/deliveries?endpoint=${endpoint.id}`}>{t('nav.deliveries')}</Link>
          </List.Item>
        </List>
      </Stack>
    </Alert>
  );
}

/** A company's webhook endpoints (the page of /webhook): each with its types, secrets, health and actions. */
export function EndpointsPage() {
  const t = useT();
  const can = useCan();
  const session = useSession();
  const client = useQueryClient();
  const list = useQuery({
    queryKey: ['endpoints'],
    queryFn: () => api<EndpointList>('GET', '/webhook/endpoints'),
    refetchInterval: session.live_refresh_ms,
  });
  const refresh = () => client.invalidateQueries({ queryKey: ['endpoints'] });
  const [adding, setAdding] = useState(false);
  const [added, setAdded] = useState<AddedEndpoint | undefined>();
  const data = list.data;
  const full = data ? data.endpoints.length >= data.limits.endpoints : false;
  return (
    <Stack>
      <Title order={1}>{t('endpoints.title')}</Title>
      <Text size="sm" c="dimmed">
        {t('endpoints.intro')}
      </Text>
      <ProblemAlert error={list.error} />
      {data?.endpoints
        .filter((e) => !e.enabled && e.disabled_automatically)
        .map((e) => (
          <DisabledNotice key={e.id} endpoint={e} />
        ))}
      {can('manage-webhook') ? (
        <Group>
          <Button onClick={() => setAdding(true)} disabled={!data || full} data-testid="add-endpoint">
            {t('endpoints.add')}
          </Button>
          {data && full ? (
            <Text size="sm" c="dimmed">
              {t('endpoints.full', { max: data.limits.endpoints })}
            </Text>
          ) : null}
        </Group>
      ) : (
        <Disallowed />
      )}
      {added ? (
        <Alert
          color="teal"
          title={t('endpoints.added', { name: endpointName(added.endpoint) })}
          withCloseButton
          closeButtonLabel={t('common.close')}
          onClose={() => setAdded(undefined)}
          data-testid="endpoint-added"
        >
          <Stack gap="xs">
            <Text size="sm">{t('endpoints.secretOnce')}</Text>
            <CopyValue value={added.secret} label={t('webhook.newSecret')} testId="new-endpoint-secret" />
          </Stack>
        </Alert>
      ) : null}
      {!data ? (
        list.isPending ? (
          <Loading />
        ) : null
      ) : data.endpoints.length === 0 ? (
        <Text data-testid="no-endpoints">{t('endpoints.none')}</Text>
      ) : (
        data.endpoints.map((e) => <EndpointCard key={e.id} endpoint={e} rules={data} onChanged={refresh} />)
      )}
      <WebhookCatalogue />
      {data ? (
        <Modal
          closeButtonProps={{ 'aria-label': t('common.close') }}
          opened={adding}
          onClose={() => setAdding(false)}
          title={t('endpoints.addTitle')}
          centered
        >
          <EndpointForm
            rules={data}
            onCancel={() => setAdding(false)}
            onAdded={async (answer) => {
              setAdding(false);
              setAdded(answer);
              await refresh();
            }}
          />
        </Modal>
      ) : null}
    </Stack>
  );
}
