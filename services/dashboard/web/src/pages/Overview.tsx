import { AreaChart, BarChart } from '@mantine/charts';
import { Card, Group, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api.js';
import { Loading, ProblemAlert } from '../components/common.js';
import { ErrorSummary, messengerLabel, useExplainError } from '../components/ErrorExplanation.js';
import { messengers } from '@mds/contracts/messengers';
import { useT } from '../i18n/locale.js';
import { useSession } from '../session.js';
import type { Overview } from '../types.js';
import { useBotNames } from './Bots.js';

function Figure({ label, value, testId }: { label: string; value: string; testId?: string }) {
  return (
    <Card withBorder padding="md">
      <Text size="sm" c="dimmed">
        {label}
      </Text>
      <Text fz={26} fw={700} data-testid={testId}>
        {value}
      </Text>
    </Card>
  );
}

/** Colours of each messenger's sent and failed series, in the catalogue's order (repeated beyond). */
const SENT_COLOURS = ['blue.7', 'violet.7', 'cyan.7', 'indigo.5'];
const FAILED_COLOURS = ['red.7', 'orange.8', 'pink.7', 'yellow.8'];

/** The chart's series: each messenger's sent counts, then each one's failed counts (the overview's keys). */
function outcomeSeries(t: ReturnType<typeof useT>) {
  const all = messengers();
  const of = (kind: 'sent' | 'failed', colours: string[]) =>
    all.map((m, i) => ({
      name: `${m.name}_${kind}`,
      label: t(`overview.series.${kind}`, { messenger: m.label }),
      color: colours[i % colours.length]!,
    }));
  return [...of('sent', SENT_COLOURS), ...of('failed', FAILED_COLOURS)];
}

export function OverviewPage() {
  const t = useT();
  const session = useSession();
  const [range, setRange] = useState<'1h' | '24h' | '7d'>('24h');
  const overview = useQuery({
    queryKey: ['overview', range],
    queryFn: () => api<Overview>('GET', `/overview?range=${range}`),
    refetchInterval: session.live_refresh_ms,
  });
  const botName = useBotNames();
  const explain = useExplainError();
  const data = overview.data;
  // Counts are whole: the charts' value axes step by whole numbers, never 0.25.
  const counts = { allowDecimals: false } as const;
  const label = (at: string) => (range === '7d' ? t.date(at) : t.time(at));
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>{t('overview.title')}</Title>
        <SegmentedControl
          aria-label={t('overview.range')}
          value={range}
          onChange={(v) => setRange(v)}
          data={[
            { value: '1h', label: t('overview.range.1h') },
            { value: '24h', label: t('overview.range.24h') },
            { value: '7d', label: t('overview.range.7d') },
          ]}
        />
      </Group>
      <Text size="sm" c="dimmed">
        {t('overview.live')}
      </Text>
      <ProblemAlert error={overview.error} />
      {!data ? (
        <Loading />
      ) : (
        <>
          <SimpleGrid cols={{ base: 2, md: 4 }}>
            <Figure label={t('overview.sent')} value={t.number(data.totals.sent)} testId="total-sent" />
            <Figure label={t('overview.failed')} value={t.number(data.totals.failed)} testId="total-failed" />
            <Figure
              label={t('overview.latency', { p: 'p50 / p90' })}
              value={`${t.ms(data.latency.p50)} / ${t.ms(data.latency.p90)}`}
            />
            <Figure
              label={t('overview.webhookRate')}
              value={data.webhooks.success_rate === null ? '—' : t.percent(data.webhooks.success_rate)}
              testId="webhook-rate"
            />
          </SimpleGrid>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              {t('overview.chart.outcomes')}
            </Title>
            <AreaChart
              withDots={false}
              h={260}
              data={data.series.map((s) => ({ ...s, label: label(s.at) }))}
              dataKey="label"
              withLegend
              yAxisProps={counts}
              series={outcomeSeries(t)}
            />
          </Card>
          <SimpleGrid cols={{ base: 1, lg: 2 }}>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                {t('overview.errors')}
              </Title>
              {data.errors.length === 0 ? (
                <Text size="sm">{t('overview.noErrors')}</Text>
              ) : (
                <Table data-testid="failures">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>{t('messages.errorCode')}</Table.Th>
                      <Table.Th>{t('messages.service')}</Table.Th>
                      <Table.Th>{t('overview.count')}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.errors.map((e) => (
                      <Table.Tr key={e.error_code + e.messenger} data-testid={`failure-${e.error_code}`}>
                        <Table.Td>
                          <ErrorSummary code={e.error_code} />
                          {explain(e.error_code) ? (
                            <Text size="xs" mt={2}>
                              {explain(e.error_code)!.action}
                            </Text>
                          ) : null}
                        </Table.Td>
                        <Table.Td>{messengerLabel(e.messenger)}</Table.Td>
                        <Table.Td>{t.number(e.count)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              )}
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                {t('overview.latencyTitle')}
              </Title>
              <Table>
                <Table.Tbody>
                  {(['p50', 'p90', 'p99'] as const).map((p) => (
                    <Table.Tr key={p}>
                      <Table.Th scope="row">{p}</Table.Th>
                      <Table.Td data-testid={`latency-${p}`}>{t.ms(data.latency[p])}</Table.Td>
                    </Table.Tr>
                  ))}
                  <Table.Tr>
                    <Table.Th scope="row">{t('overview.count')}</Table.Th>
                    <Table.Td>{t.number(data.latency.count)}</Table.Td>
                  </Table.Tr>
                </Table.Tbody>
              </Table>
              <Text size="xs" c="dimmed" mt="xs">
                {t('overview.latencyNote')}
              </Text>
            </Card>
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, lg: 2 }}>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                {t('overview.bots')}
              </Title>
              {data.bots.length === 0 ? (
                <Text size="sm">{t('overview.noData')}</Text>
              ) : (
                <BarChart
                  h={220}
                  data={data.bots.map((b) => ({ ...b, label: botName(b.bot_id) }))}
                  dataKey="label"
                  withLegend
                  yAxisProps={counts}
                  series={[
                    { name: 'sent', label: t('overview.sent'), color: 'teal.8' },
                    { name: 'failed', label: t('overview.failed'), color: 'red.7' },
                    { name: 'rate_limited', label: t('overview.rateLimited'), color: 'orange.8' },
                  ]}
                />
              )}
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                {t('overview.webhooks', { attempts: data.webhooks.attempts })}
              </Title>
              <AreaChart
                withDots={false}
                h={220}
                data={data.webhooks.series.map((s) => ({ ...s, label: label(s.at) }))}
                dataKey="label"
                withLegend
                yAxisProps={counts}
                series={[
                  { name: 'succeeded', label: t('overview.series.hookOk'), color: 'teal.8' },
                  { name: 'failed', label: t('overview.series.hookFailed'), color: 'red.7' },
                ]}
              />
            </Card>
          </SimpleGrid>
        </>
      )}
    </Stack>
  );
}
