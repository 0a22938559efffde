// mds-replay summary: messages by state, error_code, messenger and bot; accepted -> sent latency.
import type { Command } from 'commander';
import { formatSummary, summaryOf } from '../replay.js';
import { kafkaSettings, printJson, readOptions, replayOptions, type Io, type ReadFlags } from './shared.js';

export function addSummaryCommand(root: Command, io: Io): void {
  readOptions(
    root
      .command('summary')
      .description('messages by state, error_code, messenger and bot; accepted -> sent latency'),
  ).action(async (flags: ReadFlags) => {
    const { settings } = kafkaSettings(io);
    const s = await summaryOf(replayOptions(io, flags, settings));
    if (flags.json) return printJson(io, s);
    io.out(`${formatSummary(s)}\n`);
  });
}
