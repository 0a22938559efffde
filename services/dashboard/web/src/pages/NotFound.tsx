import { Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useT } from '../i18n/locale.js';

export function NotFoundPage() {
  const t = useT();
  return (
    <Stack>
      <Title order={1}>{t('notFound.title')}</Title>
      <Text>{t('notFound.body')}</Text>
      <Link to="/">{t('nav.overview')}</Link>
    </Stack>
  );
}
