import '@mantine/core/styles.css';
import '@mantine/charts/styles.css';
import '@mantine/dates/styles.css';
import './layout.css';
import {
  Badge,
  createTheme,
  darken,
  defaultVariantColorsResolver,
  MantineProvider,
  parseThemeColor,
  SegmentedControl,
  type CSSVariablesResolver,
  type VariantColorsResolver,
} from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { ApiError } from './api.js';
import { LocaleProvider } from './i18n/locale.js';
import { router } from './router.js';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal (403, 404, 422) will not change by asking again; a failure might.
      retry: (count, error) => count < 2 && !(error instanceof ApiError && error.status < 500),
      refetchOnWindowFocus: true,
    },
  },
});

// Colours chosen to keep text contrast at WCAG AA (4.5:1) on white: primary shade 8, and secondary text
// (descriptions, hints, placeholders) one step darker than Mantine's default gray.
// Light, outline and subtle variants (badges, alerts, light buttons) draw their text in shade 9 darkened by a
// third: Mantine's default is too pale on the tinted background for teal, yellow, orange and green.
const variantColorResolver: VariantColorsResolver = (input) => {
  const colors = defaultVariantColorsResolver(input);
  if (!['light', 'outline', 'subtle'].includes(input.variant)) return colors;
  const parsed = parseThemeColor({ color: input.color ?? input.theme.primaryColor, theme: input.theme });
  const shades = parsed.isThemeColor ? input.theme.colors[parsed.color] : undefined;
  return shades ? { ...colors, color: darken(shades[9], 0.35) } : colors;
};
const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: 8,
  defaultRadius: 'md',
  autoContrast: true,
  variantColorResolver,
  components: {
    // Small white text on a mid-tone fill stays under 4.5:1: badges are tinted, their text dark. A badge is
    // never cut short ("ОТПРАВЛЕ…") nor broken: it keeps its whole width, even in a narrow table cell.
    Badge: Badge.extend({
      defaultProps: { variant: 'light' },
      styles: {
        root: { flexShrink: 0, overflow: 'visible' },
        label: { overflow: 'visible', textOverflow: 'clip', overflowWrap: 'normal' },
      },
    }),
    // Segments share a narrow screen and wrap their words ("Последние 7 дней") rather than run past it.
    SegmentedControl: SegmentedControl.extend({
      styles: {
        root: { maxWidth: '100%' },
        label: { whiteSpace: 'normal', overflow: 'visible', textOverflow: 'clip' },
        innerLabel: { whiteSpace: 'normal' },
      },
    }),
  },
});
const contrast: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': '#5c636a', '--mantine-color-placeholder': '#6c737a' },
  dark: {},
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="light" cssVariablesResolver={contrast}>
      <QueryClientProvider client={queryClient}>
        <LocaleProvider>
          <RouterProvider router={router} />
        </LocaleProvider>
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
