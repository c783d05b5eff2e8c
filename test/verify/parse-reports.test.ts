import { describe, expect, it } from 'vitest';
import { parseJestJson } from '../../src/verify/parse-jest-json.js';
import { parseJunit } from '../../src/verify/parse-junit.js';
import { parseMochaJson } from '../../src/verify/parse-mocha-json.js';
import { parseResults } from '../../src/verify/parse-results.js';
import { decodeEntities, findAll, parseXml } from '../../src/verify/xml-reader.js';
import { GENERIC_JUNIT, JEST_JSON, MOCHA_STDOUT } from './samples.js';

const PYTEST_XML = `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4"><testcase classname="tests.test_a" name="test_pass" file="tests/test_a.py" line="1" time="0.002" /><testcase classname="tests.test_a" name="test_fail" file="tests/test_a.py" line="2" time="0.001"><failure message="AssertionError: one is not &lt;two&gt; &amp; 'x'&#10;assert 1 == 2">&gt;   def test_fail(): assert 1 == 2
E   AssertionError</failure></testcase><testcase classname="tests.test_a" name="test_skip" file="tests/test_a.py" line="3" time="0.000"><skipped type="pytest.skip" message="not now">tests/test_a.py:4: not now</skipped></testcase><testcase classname="tests.test_a.TestK" name="test_m[1-2]" file="tests/test_a.py" line="6" time="0.000" /><testcase classname="" name="tests.test_b" file="tests/test_b.py" time="0.000"><error message="collection failure">E   ModuleNotFoundError: No module named 'nosuchmod'</error></testcase></testsuite></testsuites>`;

describe('XML reader', () => {
  it('decodes entities and character references, leaving unknown ones alone', () => {
    expect(decodeEntities('a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos; &#10;&#x41; &nbsp;')).toBe(
      'a <b> & "c" \'d\' \nA &nbsp;',
    );
  });

  it('reads nested elements, CDATA, comments, and survives a document cut short', () => {
    const doc = parseXml(GENERIC_JUNIT);
    expect(findAll(doc, 'testcase')).toHaveLength(4);
    const failure = findAll(doc, 'failure')[0];
    expect(failure?.attrs.message).toBe('expected <2> but was "3"');
    expect(failure?.text).toBe('at CalcTest.divides(CalcTest.java:14) <raw> & unescaped');
    const cut = parseXml('<a><b x="1 > 0"><c/>text');
    expect(findAll(cut, 'c')).toHaveLength(1);
    expect(findAll(cut, 'b')[0]?.attrs.x).toBe('1 > 0');
  });
});

describe('JUnit', () => {
  it("reads pytest's xunit1 report into `file > Class > test` ids", () => {
    const results = parseJunit(PYTEST_XML, { root: '/proj' });
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['tests/test_a.py > test_pass', 'passed'],
      ['tests/test_a.py > test_fail', 'failed'],
      ['tests/test_a.py > test_skip', 'skipped'],
      ['tests/test_a.py > TestK > test_m[1-2]', 'passed'],
      ['tests/test_b.py', 'failed'],
    ]);
    expect(results[1]?.message).toContain("one is not <two> & 'x'\nassert 1 == 2");
    expect(results[0]?.durationMs).toBe(2);
    expect(results[2]?.message).toMatch(/not now/);
    expect(results[4]?.message).toMatch(/No module named 'nosuchmod'/);
  });

  it('reads other tools: classname and name when no file is given', () => {
    const results = parseJunit(GENERIC_JUNIT);
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['com.acme.CalcTest > adds & keeps', 'passed'],
      ['com.acme.CalcTest > divides', 'failed'],
      ['com.acme.CalcTest > crashes', 'failed'],
      ['com.acme.CalcTest > later', 'skipped'],
    ]);
    expect(results[1]?.message).toBe(
      'expected <2> but was "3"\nat CalcTest.divides(CalcTest.java:14) <raw> & unescaped',
    );
  });
});

describe('jest and vitest JSON', () => {
  it('reads files, suites and statuses, and a file that failed before any test ran', () => {
    const results = parseJestJson(JEST_JSON, { root: '/home/u/proj' });
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['src/sum.test.js > sum > adds', 'passed'],
      ['src/sum.test.js > sum > later', 'skipped'],
      ['src/div.test.js > div > by zero', 'failed'],
      ['src/broken.test.js', 'failed'],
    ]);
    expect(results[2]?.message).toMatch(/toThrow/);
    expect(results[3]?.message).toMatch(/Cannot find module '.\/missing'/);
  });

  it('says why when the report is missing or not a report', () => {
    expect(parseResults('vitest-json', { log: '' })).toEqual({
      parsed: false,
      why: 'the runner wrote no JSON report',
    });
    const bad = parseResults('jest-json', { log: '', report: '{"nope":1}' });
    expect(bad.parsed).toBe(false);
  });
});

describe('mocha JSON', () => {
  it('finds the report inside stdout and reads passes, failures and pending', () => {
    const results = parseMochaJson(MOCHA_STDOUT, { root: '/home/u/proj' });
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['test/calc.spec.js > calc adds', 'passed'],
      ['test/calc.spec.js > calc divides', 'failed'],
      ['test/calc.spec.js > calc later', 'skipped'],
    ]);
    expect(results[1]?.message).toMatch(/expected 3 to equal 2/);
    // no report file (mocha before 10): the log is read instead
    const outcome = parseResults('mocha-json', { log: MOCHA_STDOUT, root: '/home/u/proj' });
    expect(outcome.parsed && outcome.results).toHaveLength(3);
  });
});
