// Debian's Chromium driven by playwright-core (never a downloaded browser): headless, no GPU,
// no background traffic, a fresh profile; --no-sandbox only as root (Chromium refuses root
// with its sandbox on).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const chromiumPath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

export interface LaunchedBrowser {
  browser: BrowserContext;
  close: () => Promise<void>;
}

export async function launchChromium(): Promise<LaunchedBrowser> {
  if (!chromiumPath) throw new Error('chromium is not installed (apt-get install chromium)');
  const profile = mkdtempSync(join(tmpdir(), 'iolab-chromium-'));
  const args = ['--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-dev-shm-usage', ...(process.geteuid?.() === 0 ? ['--no-sandbox'] : [])];
  // Not the sanitizer runtime the sanitized test run preloads into iolab's processes.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k, v]) =>
    v !== undefined && !['LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS'].includes(k))) as Record<string, string>;
  const browser = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath, headless: true, args, env });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
