/**
 * The browser harness of the HTML tests: Debian's `chromium` (`/usr/bin/chromium`, or
 * `GATEHOUSE_CHROMIUM`) driven through playwright-core with `executablePath` (nothing is downloaded
 * at run time), axe-core for accessibility, and the screenshot folder. Without the binary a test file
 * prints that its browser tests did not run and why, and skips only them;
 * `GATEHOUSE_REQUIRE_CHROMIUM=1` turns that into a failure.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CHROMIUM = process.env.GATEHOUSE_CHROMIUM || '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);
export const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

/** Call at the top of a browser test file: fails when Chromium is required, says so when it is missing. */
export function announceChromium(what: string): void {
  if (!haveChromium && process.env.GATEHOUSE_REQUIRE_CHROMIUM === '1') {
    throw new Error(`GATEHOUSE_REQUIRE_CHROMIUM is set but ${CHROMIUM} is missing`);
  }
  if (!haveChromium) {
    console.warn(
      `${what} browser tests DID NOT RUN: ${CHROMIUM} is missing (install Debian's chromium: apt-get install -y chromium; .ci/run does this).`,
    );
  }
}

export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const AXE = readFileSync(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8');

/**
 * Serious or critical axe-core violations of the page. axe is evaluated through the DevTools
 * protocol, which the page's CSP does not govern, so the page keeps its real policy.
 */
export async function axeViolations(page: import('playwright-core').Page): Promise<string[]> {
  await page.evaluate(AXE);
  const r = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as {
    violations: { id: string; impact: string; help: string; nodes: { target: unknown }[] }[];
  };
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${JSON.stringify(v.nodes.map((n) => n.target))})`);
}
