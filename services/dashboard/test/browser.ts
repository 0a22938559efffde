import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, headless, as the dashboard's browser tests drive it (playwright-core). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
}
