/** Captured runner output for parsers whose runner is not installed here (shapes as the runners write them). */

/** tape 5: flat TAP 13, assertions grouped under `# test name` comments. */
export const TAPE_OUTPUT = `TAP version 13
# adds numbers
ok 1 should be strictly equal
ok 2 should be strictly equal
# subtracts numbers
not ok 3 should be strictly equal
  ---
    operator: equal
    expected: 2
    actual:   3
    at: Test.<anonymous> (/home/u/proj/test/math.js:10:5)
  ...
# pending work
ok 4 not done yet # SKIP

1..4
# tests 4
# pass  2
# skip  1
# fail  1
`;

/** node-tap 18 with --reporter=tap: TAP 14, a subtest per file, assertions inside named subtests. */
export const NODE_TAP_OUTPUT = `TAP version 14
# Subtest: test/math.js
    # Subtest: adds
        ok 1 - should be equal
        1..1
    ok 1 - adds # time=2.1ms

    # Subtest: divides
        ok 1 - should be equal
        not ok 2 - should not throw
          ---
          at:
            fileName: test/math.js
            lineNumber: 12
          message: division by zero
          ...

        1..2
    not ok 2 - divides # time=3.4ms

    # Subtest: later
    ok 3 - later # TODO not yet

    1..3
not ok 1 - test/math.js # time=310ms

1..1
`;

/** jest 29 --json: one passing file, one with a failure, one that failed to load. */
export const JEST_JSON = JSON.stringify({
  numTotalTests: 3,
  success: false,
  testResults: [
    {
      name: '/home/u/proj/src/sum.test.js',
      status: 'passed',
      message: '',
      assertionResults: [
        {
          ancestorTitles: ['sum'],
          fullName: 'sum adds',
          title: 'adds',
          status: 'passed',
          duration: 3,
          failureMessages: [],
        },
        {
          ancestorTitles: ['sum'],
          fullName: 'sum later',
          title: 'later',
          status: 'pending',
          failureMessages: [],
        },
      ],
    },
    {
      name: '/home/u/proj/src/div.test.js',
      status: 'failed',
      message: '● div › by zero',
      assertionResults: [
        {
          ancestorTitles: ['div'],
          fullName: 'div by zero',
          title: 'by zero',
          status: 'failed',
          duration: 5,
          failureMessages: [
            'Error: expect(received).toThrow()\n    at Object.<anonymous> (src/div.test.js:4:5)',
          ],
        },
      ],
    },
    {
      name: '/home/u/proj/src/broken.test.js',
      status: 'failed',
      message: "Cannot find module './missing' from 'src/broken.test.js'",
      assertionResults: [],
    },
  ],
});

/** mocha 10 --reporter=json, printed to stdout after some console output from the tests. */
export const MOCHA_STDOUT = `a log line from a test
{
  "stats": { "suites": 2, "tests": 3, "passes": 1, "pending": 1, "failures": 1 },
  "tests": [],
  "pending": [
    { "title": "later", "fullTitle": "calc later", "file": "/home/u/proj/test/calc.spec.js", "err": {} }
  ],
  "failures": [
    {
      "title": "divides",
      "fullTitle": "calc divides",
      "file": "/home/u/proj/test/calc.spec.js",
      "duration": 2,
      "err": { "message": "expected 3 to equal 2", "stack": "AssertionError: expected 3 to equal 2\\n    at Context.<anonymous> (test/calc.spec.js:9:12)" }
    }
  ],
  "passes": [
    { "title": "adds", "fullTitle": "calc adds", "file": "/home/u/proj/test/calc.spec.js", "duration": 1, "err": {} }
  ]
}
npm error Test failed.  See above for more details.
`;

/** go test -json (go 1.24): a package with a subtest table, a skip, and a package that does not build. */
export const GO_JSON = [
  { Action: 'start', Package: 'example.com/calc' },
  { Action: 'run', Package: 'example.com/calc', Test: 'TestAdd' },
  { Action: 'output', Package: 'example.com/calc', Test: 'TestAdd', Output: '=== RUN   TestAdd\n' },
  { Action: 'output', Package: 'example.com/calc', Test: 'TestAdd', Output: '--- PASS: TestAdd (0.00s)\n' },
  { Action: 'pass', Package: 'example.com/calc', Test: 'TestAdd', Elapsed: 0.001 },
  { Action: 'run', Package: 'example.com/calc', Test: 'TestTable' },
  { Action: 'run', Package: 'example.com/calc', Test: 'TestTable/one' },
  { Action: 'pass', Package: 'example.com/calc', Test: 'TestTable/one', Elapsed: 0 },
  { Action: 'run', Package: 'example.com/calc', Test: 'TestTable/two' },
  {
    Action: 'output',
    Package: 'example.com/calc',
    Test: 'TestTable/two',
    Output: '    calc_test.go:21: got 3, want 4\n',
  },
  { Action: 'fail', Package: 'example.com/calc', Test: 'TestTable/two', Elapsed: 0 },
  { Action: 'fail', Package: 'example.com/calc', Test: 'TestTable', Elapsed: 0.002 },
  { Action: 'run', Package: 'example.com/calc', Test: 'TestSlow' },
  { Action: 'output', Package: 'example.com/calc', Test: 'TestSlow', Output: '    calc_test.go:30: slow\n' },
  { Action: 'skip', Package: 'example.com/calc', Test: 'TestSlow', Elapsed: 0 },
  { Action: 'output', Package: 'example.com/calc', Output: 'FAIL\n' },
  { Action: 'fail', Package: 'example.com/calc', Elapsed: 0.01 },
  {
    ImportPath: 'example.com/broken [example.com/broken.test]',
    Action: 'build-output',
    Output: '# example.com/broken\n',
  },
  {
    ImportPath: 'example.com/broken [example.com/broken.test]',
    Action: 'build-output',
    Output: './broken.go:3:8: undefined: nope\n',
  },
  { ImportPath: 'example.com/broken [example.com/broken.test]', Action: 'build-fail' },
  { Action: 'start', Package: 'example.com/broken' },
  { Action: 'output', Package: 'example.com/broken', Output: 'FAIL\texample.com/broken [build failed]\n' },
  {
    Action: 'fail',
    Package: 'example.com/broken',
    Elapsed: 0,
    FailedBuild: 'example.com/broken [example.com/broken.test]',
  },
  { Action: 'output', Package: 'example.com/util', Output: '?   \texample.com/util\t[no test files]\n' },
  { Action: 'skip', Package: 'example.com/util', Elapsed: 0 },
]
  .map((event) => JSON.stringify({ Time: '2025-01-01T00:00:00Z', ...event }))
  .join('\n');

/** cargo test (rust 1.9x), stdout and stderr together: a unit target, an integration target, doc tests. */
export const CARGO_OUTPUT = `   Compiling calc v0.1.0 (/home/u/calc)
    Finished \`test\` profile [unoptimized + debuginfo] target(s) in 1.92s
     Running unittests src/lib.rs (target/debug/deps/calc-a35a48c092d3f767)

running 3 tests
test tests::it_works ... ok
test tests::slow ... ignored, needs a database
test tests::it_fails ... FAILED

failures:

---- tests::it_fails stdout ----
some output

thread 'tests::it_fails' (10806) panicked at src/lib.rs:14:46:
assertion \`left == right\` failed
  left: 4
 right: 5


failures:
    tests::it_fails

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.21s

error: test failed, to rerun pass \`--lib\`
     Running tests/integ.rs (target/debug/deps/integ-243de877ca0502a3)

running 1 test
test integ_ok ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests calc

running 1 test
test src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
`;

/** A JUnit report from a non-pytest tool: nested suites, CDATA, entities, an error and a comment. */
export const GENERIC_JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by a tool -->
<testsuites>
  <testsuite name="outer">
    <testsuite name="inner">
      <testcase classname="com.acme.CalcTest" name="adds &amp; keeps" time="0.012"/>
      <testcase classname="com.acme.CalcTest" name="divides" time="0.003">
        <failure message="expected &lt;2&gt; but was &quot;3&quot;" type="AssertionError"><![CDATA[at CalcTest.divides(CalcTest.java:14) <raw> & unescaped]]></failure>
      </testcase>
      <testcase classname="com.acme.CalcTest" name="crashes"><error message="NullPointerException"/></testcase>
      <testcase classname="com.acme.CalcTest" name="later"><skipped/></testcase>
    </testsuite>
  </testsuite>
</testsuites>`;
