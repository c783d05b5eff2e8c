import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { shannonEntropy } from '../../src/policy/secret-rules.js';
import { MAX_FILE_BYTES, redact, ScanError, scanRepo, scanText } from '../../src/policy/secret-scan.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

// Every fake secret is assembled here so this repository never holds one a scanner would flag. AWS's
// documented AKIAIOSFODNN7EXAMPLE is not a finding (see the corpus), so these are synthetic ones.
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const S = {
  awsId: 'AKIA' + 'Q3ZLW7RN4XTB2KHD',
  awsSk: 'h8Xq2/Lm4Kp9Zr7Tv1Wy' + 'N3cB6dF0gJ5sE/aU2iOo',
  github: 'ghp_' + 'R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf0123',
  githubPat: [
    'github_pat_',
    '11ABCDEFG0123456789abc_',
    'Kd83nQ0s7Vb2Lm5Zp9Rt',
    'Q7w2e9R4t6Y1u3I5o8P0',
    'aSdFgHjKlZxCvBnM',
  ].join(''),
  slack: 'xoxb-' + '1234567890-1234567890123-' + 'AbCdEfGhIjKlMnOpQrStUvWx',
  slackHook: 'https://hooks.slack.com/services/' + 'T0AB12CD3/B0EF45GH6/' + 'aBcDeFgHiJkLmNoPqRsTuVwX',
  npm: 'npm_' + 'aB3dE5gH7jK9mN1pQ3' + 'sT5vW7yZ9bC1dE3fG5',
  stripe: 'sk_' + 'live_' + '51HqLyjWDarjtT1zdp7dcXyZ',
  jwt: `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ sub: '1234567890', name: 'Ada' })}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c`,
  azureKey: [
    'w1kpVQVZd2BZLzjNxc',
    'whOtERJt61fO2JwinS',
    'kNB0RhxSDJwMKitcs6',
    'h8BUyB4UIz4gfzllRk',
    'wq9QVizzbQ8gAb==',
  ].join(''),
  pemBody: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7' + 'VJTUt9Us8cKjMzEfYyjiWA4R4',
  entropyB64: 'HDQlu4Wmf1Qh/4FKIt6C' + 'q6XmT9wj7fF/oY+JDU1M',
  entropyHex: '9e9374699e778202' + '85c94b3a39f914d3' + 'a2bcb3052f81c9e7',
};
const pem = (kind: string) =>
  [`-----BEGIN ${kind}PRIVATE KEY-----`, S.pemBody, S.pemBody, `-----END ${kind}PRIVATE KEY-----`].join('\n');

const rules = (path: string, text: string) => scanText(path, text).map((f) => f.rule);

describe('scanText finds each kind of secret', () => {
  const cases: Array<[string, string, string]> = [
    ['aws-access-key', 'config.ts', `const id = "${S.awsId}";`],
    ['aws-secret-key', '.env', `AWS_SECRET_ACCESS_KEY=${S.awsSk}`],
    ['private-key', 'id_rsa', pem('RSA ')],
    ['private-key', 'key.pem', pem('')],
    [
      'gcp-service-account',
      'sa.json',
      JSON.stringify({ type: 'service_account', private_key: `${pem('')}\n` }),
    ],
    [
      'azure-storage-key',
      'app.config',
      `DefaultEndpointsProtocol=https;AccountName=demo;AccountKey=${S.azureKey};`,
    ],
    ['github-token', 'ci.sh', `curl -H "Authorization: token ${S.github}" https://api.github.com`],
    ['github-token', 'ci.yml', `  GH: ${S.githubPat}`],
    ['slack-token', 'bot.py', `client = WebClient(token="${S.slack}")`],
    ['slack-webhook', 'notify.sh', `curl -X POST ${S.slackHook}`],
    ['npm-token', '.npmrc', `//registry.npmjs.org/:_authToken=${S.npm}`],
    ['stripe-key', 'pay.rb', `Stripe.api_key = '${S.stripe}'`],
    ['jwt', 'auth.test.ts', `const bearer = \`Bearer ${S.jwt}\`;`],
    ['secret-assignment', 'db.ts', 'const dbPassword = "hunter2-' + 'Tr0ub4dor";'],
    ['secret-assignment', 'settings.yml', 'client_secret: "q8Xz1' + '-pL0v"'],
    ['high-entropy', 'keys.ts', `const signingKey2 = ["${S.entropyB64}"];`],
    ['high-entropy', '.env', `SIGNING=${S.entropyHex}`],
  ];
  for (const [rule, path, text] of cases) {
    it(`${rule} in ${path}`, () => {
      expect(rules(path, text)).toEqual([rule]);
    });
  }

  it('reports 1-based line and the column where the secret starts', () => {
    const [finding] = scanText('src/a.ts', `// config\n\nexport const id = '${S.awsId}';\n`);
    expect(finding).toEqual({
      file: 'src/a.ts',
      line: 3,
      column: 20,
      rule: 'aws-access-key',
      preview: 'AKIA****',
    });
  });

  it('names a secret once, by its most specific rule', () => {
    expect(rules('a.ts', `const token = "${S.github}";`)).toEqual(['github-token']);
    expect(rules('a.py', `aws_secret_access_key = "${S.awsSk}"`)).toEqual(['aws-secret-key']);
  });

  it('finds several secrets in one file, in file order', () => {
    const text = `a = "${S.npm}"\nb = "${S.awsId}"\n`;
    expect(scanText('x.py', text).map((f) => [f.line, f.rule])).toEqual([
      [1, 'npm-token'],
      [2, 'aws-access-key'],
    ]);
  });
});

describe('scanText stays quiet on ordinary content', () => {
  it('ignores ordinary TypeScript', () => {
    const source = [
      "import { readFileSync } from 'node:fs';",
      "import { resolve } from 'node:path';",
      "const password = process.env.DB_PASSWORD ?? '';",
      "const tokenizer = 'cl100k_base';",
      'export function tokenCount(text: string, apiKey: string): number {',
      "  if (apiKey === '') throw new Error('missing api key');",
      "  const passwordLabel = 'Enter your password';",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is source text under test
      '  const headers = { authorization: `Bearer ${apiKey}` };',
      '  return text.split(/\\s+/).length + Object.keys(headers).length;',
      '}',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is source text under test
      "export const config = { secret: '${SECRET}', token: 'refresh_token', password: 'changeme' };",
      "const url = 'https://example.com/api/v1/projects/keel/pipelines?page=2&per_page=100';",
      "const veryLongIdentifierWithoutDigitsAtAll = 'someVeryLongCamelCaseFunctionNameHere';",
      "const header = '-----BEGIN PRIVATE KEY-----'; // code that parses keys, not a key",
      "const path = 'src/policy/secret-scan.test.ts';",
      'const n = "12345678901234567890123";',
    ].join('\n');
    expect(scanText('src/example.ts', source)).toEqual([]);
  });

  it('ignores a UUID and a git sha', () => {
    const text = [
      "const id = '123e4567-e89b-12d3-a456-426614174000';",
      "const commit = 'a94a8fe5ccb19ba61c4c0873d391e987982fbbd3';",
      'HEAD=3f786850e387550fdab836ed7e6dc881de23001b',
      "const digest = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';",
    ].join('\n');
    expect(scanText('src/ids.ts', text)).toEqual([]);
  });

  it('ignores integrity hashes in lock files but still finds a token leaked into one', () => {
    const lock = JSON.stringify(
      {
        name: 'demo',
        lockfileVersion: 3,
        packages: {
          'node_modules/zod': {
            version: '4.6.7',
            resolved: 'https://registry.npmjs.org/zod/-/zod-4.6.7.tgz',
            integrity: [
              'sha512-Q2N2BoTvy',
              'BKPaUyWLDnX7mxnC',
              'TzPhWN2LbZqYZQ+r',
              'C2u0vYCk4aLpwAVe',
              'q3hTeUBW9hNzvHeO',
              '3szG/rdu/kfHDw==',
            ].join(''),
          },
        },
      },
      null,
      2,
    );
    expect(scanText('package-lock.json', lock)).toEqual([]);
    expect(scanText('yarn.lock', `  resolved "https://r.example/x.tgz#${S.entropyHex}"\n`)).toEqual([]);
    const leaked = lock.replace('zod-4.6.7.tgz', `zod-4.6.7.tgz?token=${S.npm}`);
    expect(rules('package-lock.json', leaked)).toEqual(['npm-token']);
  });

  it('reads unquoted `key = value` as a secret only in config and shell files, not in code', () => {
    const line = 'db_password = Hunter2' + 'Tr0ub\n';
    expect(rules('settings.ini', line)).toEqual(['secret-assignment']);
    expect(rules('deploy.sh', `export ${line}`)).toEqual(['secret-assignment']);
    expect(rules('src/db.py', line)).toEqual([]);
    expect(rules('src/db.ts', 'const token = await fetchToken2();\n')).toEqual([]);
  });

  it('ignores placeholders and documentation values', () => {
    const text = [
      'password = "your-password-here"',
      'api_key = "<API_KEY>"',
      'token: "{{ secrets.TOKEN }}"',
      'secret = "GITHUB_TOKEN"',
      'SLACK_TOKEN="xoxb-your-token-here"',
      'AUTH_TOKEN="xxxxxxxxxxxxxxxx"',
    ].join('\n');
    expect(scanText('README.md', text)).toEqual([]);
  });
});

describe('keel-allow pragma', () => {
  const line = `const id = "${S.awsId}";`;

  it('suppresses the named rule on its own line only', () => {
    const text = `${line} // keel-allow: aws-access-key\n${line}\n`;
    expect(scanText('a.ts', text).map((f) => f.line)).toEqual([2]);
  });

  it('takes a list, and all', () => {
    expect(scanText('a.ts', `${line} // keel-allow: jwt, aws-access-key`)).toEqual([]);
    expect(scanText('a.ts', `${line} # keel-allow: all`)).toEqual([]);
  });

  it('does not suppress rules it does not name', () => {
    expect(rules('a.ts', `${line} // keel-allow: github-token`)).toEqual(['aws-access-key']);
  });
});

describe('redaction', () => {
  it('shows four characters of a long secret and fewer of a short one', () => {
    expect(redact(S.github)).toBe('ghp_****');
    expect(redact('hunter22')).toBe('hu****');
  });

  it('never puts a whole secret in a finding', () => {
    const text = Object.values(S)
      .map((v, i) => `value${i} = "${v}"`)
      .join('\n');
    const findings = scanText('all.env', `${text}\n${pem('')}\n`);
    expect(findings.length).toBeGreaterThanOrEqual(10);
    const out = JSON.stringify(findings);
    for (const secret of [...Object.values(S), 'hunter2-Tr0ub4dor']) expect(out).not.toContain(secret);
  });
});

describe('shannonEntropy', () => {
  it('is zero for one repeated character and log2(n) for n distinct ones', () => {
    expect(shannonEntropy('aaaaaaaa')).toBe(0);
    expect(shannonEntropy('abcdefgh')).toBeCloseTo(3);
  });
});

describe('scanRepo', () => {
  const savedIndex = process.env.GIT_INDEX_FILE;
  afterEach(() => {
    if (savedIndex === undefined) delete process.env.GIT_INDEX_FILE;
    else process.env.GIT_INDEX_FILE = savedIndex;
  });

  it('scans staged content, not the working tree, and only added or changed files', () => {
    const dir = gitRepo({ 'old.ts': `export const id = '${S.awsId}';\n`, 'b.ts': 'export {};\n' });
    writeFiles(dir, { 'b.ts': `export const t = '${S.github}';\n` });
    git(dir, 'add', 'b.ts');
    writeFiles(dir, { 'b.ts': 'export {};\n', 'untracked.ts': `const n = '${S.npm}';\n` });
    const result = scanRepo(dir, { allFiles: false });
    expect(result.filesScanned).toBe(1);
    expect(result.findings.map((f) => `${f.file}:${f.line}:${f.rule}`)).toEqual(['b.ts:1:github-token']);
  });

  it('with allFiles scans every tracked file as it is on disk', () => {
    const dir = gitRepo({ 'src/old.ts': `export const id = '${S.awsId}';\n`, 'b.ts': 'export {};\n' });
    writeFiles(dir, { 'untracked.ts': `const n = '${S.npm}';\n` });
    const result = scanRepo(dir, { allFiles: true });
    expect(result.filesScanned).toBe(2);
    expect(result.findings.map((f) => f.file)).toEqual(['src/old.ts']);
  });

  it('skips binary files and files over the size limit', () => {
    const dir = gitRepo();
    writeFileSync(join(dir, 'blob.bin'), Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(S.awsId)]));
    writeFiles(dir, { 'big.txt': `${S.awsId}\n${'x'.repeat(MAX_FILE_BYTES)}` });
    git(dir, 'add', '-A');
    expect(scanRepo(dir, { allFiles: false })).toEqual({ filesScanned: 0, findings: [] });
    expect(scanRepo(dir, { allFiles: true }).findings).toEqual([]);
  });

  it('scans from a subfolder and reports paths from the repository root', () => {
    const dir = gitRepo({ 'pkg/a/key.ts': `const id = '${S.awsId}';\n` });
    expect(scanRepo(join(dir, 'pkg'), { allFiles: true }).findings.map((f) => f.file)).toEqual([
      'pkg/a/key.ts',
    ]);
  });

  it("reads a hook's temporary index when it belongs to this repository, and ignores another's", () => {
    const dir = gitRepo({ 'a.ts': 'export {};\n' });
    writeFiles(dir, { 'a.ts': `export const t = '${S.github}';\n` });
    const index = join(dir, '.git', 'next-index.lock');
    execFileSync('git', ['read-tree', 'HEAD'], {
      cwd: dir,
      env: { PATH: process.env.PATH, GIT_INDEX_FILE: index },
    });
    execFileSync('git', ['add', 'a.ts'], {
      cwd: dir,
      env: { PATH: process.env.PATH, GIT_INDEX_FILE: index },
    });
    expect(scanRepo(dir, { allFiles: false }).findings).toEqual([]);
    process.env.GIT_INDEX_FILE = index;
    expect(scanRepo(dir, { allFiles: false }).findings.map((f) => f.rule)).toEqual(['github-token']);
    process.env.GIT_INDEX_FILE = join(tempDir(), 'index');
    expect(scanRepo(dir, { allFiles: false }).findings).toEqual([]);
  });

  it('fails with NOT_A_REPO outside a repository', () => {
    const dir = tempDir();
    expect(() => scanRepo(dir, { allFiles: false })).toThrow(ScanError);
    expect(() => scanRepo(dir, { allFiles: false })).toThrow(/not a git repository/);
  });
});
