import { printedHelp } from '../cli-flags';

/** What the long-run scripts print: one line per case, its problems or "ok", and a failing exit code if any case failed. */
export class CaseReport {
  readonly failures: string[] = [];

  add(what: string, problems: readonly string[], summary: string): void {
    console.log(`${what}: ${problems.length ? `FAILED: ${problems.join('; ')}` : 'ok'} (${summary})`);
    this.failures.push(...problems.map((p) => `${what}: ${p}`));
  }

  /** Exits 1 when a case failed; an exception that ended the run early does the same. */
  static async run(usage: string, cases: (report: CaseReport) => Promise<void>): Promise<void> {
    if (printedHelp(usage)) return;
    const report = new CaseReport();
    try {
      await cases(report);
    } catch (err) {
      console.error(`FAILED: ${(err as Error).stack ?? String(err)}`);
      process.exit(1);
    }
    if (report.failures.length) process.exit(1);
  }
}
