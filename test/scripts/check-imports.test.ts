/** scripts/check-imports.mjs, as `npm run check` runs it: imports point down the layers (docs/ARCHITECTURE.md). */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir, writeFiles } from '../helpers/tmp.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const script = join(repo, 'scripts', 'check-imports.mjs');

function check(root: string) {
  const run = spawnSync(process.execPath, [script, root], { encoding: 'utf8' });
  return { status: run.status, stderr: run.stderr, stdout: run.stdout };
}

describe('check-imports', () => {
  it("passes on keel's own src", () => {
    const run = check(repo);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('fails with file:line and the arrow on an import pointing up, a cycle between folders, or a folder in no layer', () => {
    const root = tempDir();
    writeFiles(root, {
      // upward, as a type import, an inline import() type and a bare import; a downward one beside them
      'src/policy/gate.ts': [
        "import type { Runtime } from '../agent/runtime.js';",
        "import { readConfig } from '../config/load.js';",
        'export interface Deps {',
        "  spend: import('../agent/budgets.js').Spend;",
        '}',
        "import '../agent/side-effect.js';",
        "// an import() in a comment is none: import('../cli/main.js')",
        '',
      ].join('\n'),
      'src/agent/runtime.ts': "import { decide } from '../policy/gate.js';\n",
      // cli and chat share a layer: either may import the other, not both
      'src/cli/main.ts': "const chat = await import('../chat/app.js');\n",
      'src/chat/app.ts': [
        '/** The chat. */',
        'export {',
        '  inertLine,',
        "} from '../cli/inert.js';",
        '',
      ].join('\n'),
      'src/relay/server.ts': "import { openDb } from '../store/db.js';\n",
    });
    const run = check(root);
    expect(run.status).toBe(1);
    const lines = run.stderr.split('\n');
    expect(lines).toContain(
      "  src/policy/gate.ts:1: policy -> agent ('../agent/runtime.js') points up: services imports core",
    );
    expect(lines).toContain(
      "  src/policy/gate.ts:4: policy -> agent ('../agent/budgets.js') points up: services imports core",
    );
    expect(lines).toContain(
      "  src/policy/gate.ts:6: policy -> agent ('../agent/side-effect.js') points up: services imports core",
    );
    expect(lines).toContain(
      '  folders import each other (chat, cli): chat -> cli (src/chat/app.ts:4), cli -> chat (src/cli/main.ts:1)',
    );
    expect(run.stderr).toMatch(/src\/relay: in no layer/);
    // nothing else: the downward imports, the commented import() and agent -> policy are no problem
    expect(run.stderr).toMatch(/^check-imports: 5 import problems/);
  });
});
