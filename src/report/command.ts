// `iolab report FILE.json... -o report.html`: the command; the work is in build.ts, loaded
// when a report is made (other commands start without it and the charting library).
import { Command } from 'commander';
import { oneLineErrors } from '../cli-util.js';
import { pathArgument, pathOption } from '../path-options.js';
import { standardStream, writeOutputFile } from '../write-target.js';
import { showText } from '../show-bytes.js';

export function reportCommand(): Command {
  return oneLineErrors(new Command('report')
    .description('one self-contained HTML file with charts of benchmark JSON (bench iops/fio, latency, echo, ipc, api): opens from disk, no network')
    .addArgument(pathArgument('<files...>', 'benchmark JSON files (--json or --output of a bench, or fio --output-format=json)',
      { output: false, called: 'input' }))
    .addOption(pathOption('-o, --output <file>', 'the HTML file to write (- prints it; an existing file only with --force)',
      { output: true, results: { createFolders: false } }).makeOptionMandatory())
    .option('--force', 'replace an existing file (or a symlink, never its target)')
    .addHelpText('after', `
Example:
  iolab bench iops --filename /tmp/t.dat --ioengine io_uring,psync --json > iops.json
  iolab bench echo --clients 10,100 --duration 2 --rounds 1 --output echo.json
  iolab report iops.json echo.json -o report.html`)
    .action(async (files: string[], opts: { output: string }) => {
      const { buildReport } = await import('./build.js');
      const { html, rendered } = await buildReport(files);
      writeOutputFile(opts.output, html, '-o');
      if (opts.output === '-' || standardStream(opts.output)) return;
      const charts = rendered.reduce((n, r) => n + r.charts.length, 0);
      process.stdout.write(`wrote ${showText(opts.output)}: ${charts} chart(s) from ${files.length} file(s)\n`);
    }));
}
