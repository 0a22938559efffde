import { Accordion, Card, Code, Group, Stack, Tabs, Text, Title } from '@mantine/core';
import { VERIFY_SNIPPETS, WEBHOOK_CATALOGUE } from '../../../src/domain/webhook-catalogue.js';
import type { MessageKey } from '../i18n/en.js';
import { useT } from '../i18n/locale.js';

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** Every notification an endpoint may receive (schema and example), and how to verify a signature. */
export function WebhookCatalogue() {
  const t = useT();
  return (
    <Card withBorder>
      <Stack>
        <Title order={2} size="h4">
          {t('webhook.catalogue')}
        </Title>
        <Text size="sm" c="dimmed">
          {t('webhook.catalogueIntro')}
        </Text>
        <Accordion variant="separated" data-testid="catalogue">
          {WEBHOOK_CATALOGUE.map((entry) => (
            <Accordion.Item key={entry.type} value={entry.type}>
              <Accordion.Control>
                <Group gap="sm">
                  <Code>{entry.type}</Code>
                  <Text size="sm">{t(`catalogue.${entry.type}` as MessageKey)}</Text>
                </Group>
              </Accordion.Control>
              <Accordion.Panel>
                <Stack gap="xs">
                  <Text fw={600} size="sm">
                    {t('webhook.example')}
                  </Text>
                  <Code block tabIndex={0}>
                    {pretty(entry.example)}
                  </Code>
                  <Text fw={600} size="sm">
                    {t('webhook.schema')}
                  </Text>
                  <Code block tabIndex={0}>
                    {pretty(entry.schema)}
                  </Code>
                </Stack>
              </Accordion.Panel>
            </Accordion.Item>
          ))}
        </Accordion>
        <Title order={3} size="h5">
          {t('webhook.verify')}
        </Title>
        <Text size="sm" c="dimmed">
          {t('webhook.verifyIntro')}
        </Text>
        <Tabs defaultValue={VERIFY_SNIPPETS[0]!.language}>
          <Tabs.List>
            {VERIFY_SNIPPETS.map((s) => (
              <Tabs.Tab key={s.language} value={s.language}>
                {s.language === 'Any language' ? t('webhook.anyLanguage') : s.language}
              </Tabs.Tab>
            ))}
          </Tabs.List>
          {VERIFY_SNIPPETS.map((s) => (
            <Tabs.Panel key={s.language} value={s.language} pt="xs">
              <Code block tabIndex={0}>
                {s.code}
              </Code>
            </Tabs.Panel>
          ))}
        </Tabs>
      </Stack>
    </Card>
  );
}
