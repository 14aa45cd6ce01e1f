// Reads a `dotnet test` TRX report (Visual Studio's test-results XML) into one result per test.

import { XMLParser } from 'fast-xml-parser';

/** One .NET test's outcome and, when it failed, its message and stack. */
export interface DotnetResult {
  outcome: string;
  message: string;
}

/** The results in a TRX file's text, by fully qualified test name (as `dotnet test --list-tests` prints it). */
export function dotnetResults(trx: string): Map<string, DotnetResult> {
  const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(trx) as {
    TestRun: { Results?: { UnitTestResult?: unknown } };
  };
  const raw = doc.TestRun.Results?.UnitTestResult;
  const rows = (Array.isArray(raw) ? raw : raw ? [raw] : []) as {
    testName: string;
    outcome: string;
    Output?: { ErrorInfo?: { Message?: string; StackTrace?: string } };
  }[];
  const out = new Map<string, DotnetResult>();
  for (const r of rows) {
    const err = r.Output?.ErrorInfo;
    out.set(r.testName, { outcome: r.outcome, message: err ? `${err.Message ?? ''}\n${err.StackTrace ?? ''}` : '' });
  }
  return out;
}
