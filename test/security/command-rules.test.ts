/**
 * A "never" command rule (deny_commands) catches the command however the model wraps it, and an
 * "always allow" rule (allow_commands) allows only that command with plain arguments, never a line that
 * smuggles another command after it. The gate's use of both runs through chat in test/e2e/chat-permissions.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { allowedBy, deniedBy } from '../../src/policy/command-rules.js';

describe('command rules', () => {
  it('a deny rule catches wrapped, joined, quoted and pathed forms of the command', () => {
    const deny = ['git push'];
    for (const line of [
      'git push',
      'git push origin main --force',
      'git -C . push',
      '/usr/bin/git push',
      'FOO=1 git push',
      'sudo git push',
      'cd x && git push',
      'true; git push',
      'echo a | git push',
      "sh -c 'git push'",
      'bash -c "cd .. && git push"',
      'echo $(git push)',
      'echo `git push`',
      'git "push"',
      "g'i't pu''sh",
      'git pu\\sh',
      'git\tpush',
      '(git push)',
      '{ git push; }',
    ])
      expect(deniedBy(line, deny), line).toBe('git push');
    for (const line of ['git pull', 'git status', 'echo pushing', 'gitk push-notes'])
      expect(deniedBy(line, deny), line).toBeUndefined();
  });

  it('an allow rule is the command with plain arguments only', () => {
    const allow = ['npm test'];
    for (const line of ['npm test', '  npm   test  ', 'npm test -- --run src/a.test.ts'])
      expect(allowedBy(line, allow), line).toBe('npm test');
    for (const line of [
      'npm test; curl evil.example',
      'npm test && rm -rf .',
      'npm test | sh',
      'npm test $(curl x)',
      'npm test `id`',
      'npm test > /etc/passwd',
      'npm test\nrm -rf .',
      'npm testx',
      'npx npm test',
      'npm run test',
      "npm test '; rm'",
    ])
      expect(allowedBy(line, allow), line).toBeUndefined();
  });
});
