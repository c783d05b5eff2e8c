/** JUnit XML parsing, shaped for pytest's reports (xunit1 adds each test's file) and tolerant of others. */
import { clipMessage, dedupeIds, joinId, relativeFile } from './result-ids.js';
import type { TestResult, TestStatus } from './types.js';
import { findAll, parseXml, type XmlElement } from './xml-reader.js';

export interface JunitOptions {
  root?: string;
}

/** Parse a JUnit XML report into test results; ids are `file > Class > test` when the file is known. */
export function parseJunit(xml: string, opts: JunitOptions = {}): TestResult[] {
  const cases = findAll(parseXml(xml), 'testcase');
  return dedupeIds(cases.map((testcase) => toResult(testcase, opts.root)));
}

function toResult(testcase: XmlElement, root: string | undefined): TestResult {
  const name = testcase.attrs.name ?? '';
  const classname = testcase.attrs.classname ?? '';
  const file = testcase.attrs.file === undefined ? undefined : relativeFile(testcase.attrs.file, root);
  const { status, message } = outcome(testcase);
  const time = Number(testcase.attrs.time);
  const durationMs = Number.isFinite(time) && testcase.attrs.time !== undefined ? time * 1000 : undefined;
  const base = {
    status,
    ...(durationMs === undefined ? {} : { durationMs }),
    ...(message === undefined ? {} : { message }),
  };
  if (file === undefined) return { id: joinId([classname, name]), name, ...base };
  const module = file.replace(/\.py$/, '').split('/').join('.');
  // pytest reports a module that failed to import as a case named after the module, with no class
  if (classname === '' && (name === module || name === '')) return { id: file, name: file, file, ...base };
  const classes = classname.startsWith(`${module}.`) ? classname.slice(module.length + 1).split('.') : [];
  return { id: joinId([file, ...classes, name]), name, file, ...base };
}

function outcome(testcase: XmlElement): { status: TestStatus; message?: string } {
  for (const child of testcase.children) {
    if (child.name === 'failure' || child.name === 'error') {
      return { status: 'failed', ...messageOf(child) };
    }
  }
  const skipped = testcase.children.find((child) => child.name === 'skipped');
  if (skipped !== undefined) return { status: 'skipped', ...messageOf(skipped) };
  return { status: 'passed' };
}

function messageOf(el: XmlElement): { message?: string } {
  const head = el.attrs.message ?? '';
  const body = el.text.trim();
  const text = body.includes(head) ? body : [head, body].filter((part) => part !== '').join('\n');
  const message = clipMessage(text);
  return message === undefined ? {} : { message };
}
