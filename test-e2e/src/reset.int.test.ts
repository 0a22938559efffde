import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot } from '@mds/local-infra';

// `npm run reset` (scripts/reset.mjs; `npm start -- --fresh` empties the run directory the same way),
// on a run directory of its own (MDS_RUN_DIR).

let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'mds-reset-'));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const dev = () => join(base, 'dev');

function reset() {
  const run = spawnSync(process.execPath, [join(repoRoot(), 'scripts', 'reset.mjs')], {
    env: { ...process.env, MDS_RUN_DIR: base },
    encoding: 'utf8',
  });
  return { status: run.status, out: run.stdout.trim(), err: run.stderr.trim() };
}

/** A pid no process has (one that just ended). */
function endedPid(): number {
  const ended = spawnSync(process.execPath, ['-e', '0']);
  return ended.pid;
}

function runDirAsNpmStartLeavesIt(state: { kafka?: { pid: number }; postgres?: { pid: number } }) {
  for (const folder of ['kafka', 'postgres', 'logs']) {
    mkdirSync(join(dev(), folder), { recursive: true });
    writeFileSync(join(dev(), folder, 'data'), 'x'.repeat(2048));
  }
  for (const file of ['messenger-simulator.sqlite', 'demo.json', 'secrets.json', 'notes.txt']) {
    writeFileSync(join(dev(), file), '{}');
  }
  writeFileSync(join(dev(), 'state.json'), JSON.stringify(state));
}

describe('npm run reset', () => {
  it('empties the run directory and says what it removed', () => {
    runDirAsNpmStartLeavesIt({ kafka: { pid: endedPid() }, postgres: { pid: endedPid() } });
    const run = reset();
    expect(run.status).toBe(0);
    expect(run.out).toMatch(/^\[reset\] removed .*dev \(6\.\d KB\): /);
    expect(run.out.replace(/^.*?: /, '')).toBe(
      [
        'demo.json (the demo company and its key)',
        'kafka/ (Kafka: every event)',
        'logs/',
        "messenger-simulator.sqlite (the simulator's bots, people, chats and webhooks received)",
        'notes.txt',
        'postgres/ (PostgreSQL: companies, API keys, bots, clients, webhooks)',
        'secrets.json (local secrets)',
        'state.json (process records)',
      ].join(', '),
    );
    expect(existsSync(dev())).toBe(false);
  });

  it('says so when there is nothing to remove', () => {
    expect(reset()).toMatchObject({
      status: 0,
      out: expect.stringMatching(/^\[reset\] nothing to remove: .*dev holds nothing$/),
    });
  });

  it('removes nothing while the Kafka or PostgreSQL recorded there still run', () => {
    runDirAsNpmStartLeavesIt({ kafka: { pid: endedPid() }, postgres: { pid: process.pid } });
    const run = reset();
    expect(run.status).toBe(1);
    expect(run.err).toMatch(
      new RegExp(
        `^\\[reset\\] PostgreSQL \\(pid ${process.pid}\\) of .*dev still run: stop npm start \\(Ctrl-C\\) or run \`npm run infra:down\`, then try again$`,
      ),
    );
    expect(existsSync(join(dev(), 'messenger-simulator.sqlite'))).toBe(true);
  });
});
