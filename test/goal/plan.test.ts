/** The plan's checks, one refusal each: what keel goal says before anything starts. */
import { describe, expect, it } from 'vitest';
import { ancestors, dependencyOrder, readPlan } from '../../src/goal/plan.js';
import { gitRepo } from '../helpers/tmp.js';

const repo = gitRepo({ 'src/a.js': '', 'src/b.js': '' });
const plan = (tasks: unknown[]) => JSON.stringify({ tasks });
const t = (id: string, scope: string[], depends_on: string[] = []) => ({ id, title: id, scope, depends_on });

describe('goal plan', () => {
  it('reads a plan from a fenced answer, normalizes scopes, orders by dependency', () => {
    const tasks = readPlan(
      `Here:\n\`\`\`json\n${plan([t('c', ['./src/c/**'], ['a', 'b']), t('a', ['src/a.js']), t('b', ['src/b.js/'])])}\n\`\`\``,
      repo,
    );
    expect(tasks.map((x) => x.scope)).toEqual([['src/c'], ['src/a.js'], ['src/b.js']]);
    expect(dependencyOrder(tasks).map((x) => x.id)).toEqual(['a', 'b', 'c']);
    expect([...(ancestors(tasks).get('c') ?? [])].sort()).toEqual(['a', 'b']);
  });

  it.each([
    ['no JSON at all', 'I would split it in two.', 'the answer holds no JSON object'],
    ['an unknown key', plan([{ ...t('a', ['x']), owner: 'me' }]), '"tasks.0": unknown key "owner"'],
    ['a duplicate id', plan([t('a', ['x']), t('a', ['y'])]), 'task id "a" is used twice'],
    [
      'a missing dependency',
      plan([t('a', ['x'], ['z'])]),
      'task a depends on "z", which is no task of the plan',
    ],
    ['a self-dependency', plan([t('a', ['x'], ['a'])]), 'task a depends on itself'],
    ['a glob', plan([t('a', ['src/*.js'])]), 'task a: scope "src/*.js" is a glob'],
    ['git’s folder', plan([t('a', ['.git/hooks'])]), "task a: scope .git/hooks is git's own folder"],
    ['a climb out', plan([t('a', ['src/../../x'])]), 'task a: scope src/../../x climbs out with ..'],
    [
      'the whole repository beside a sibling',
      plan([t('a', ['.']), t('b', ['src/b.js'])]),
      'tasks a and b can run at once (neither depends on the other) and their scopes overlap: . and src/b.js (both hold src/b.js)',
    ],
  ])('refuses %s', (_what, answer, message) => {
    expect(() => readPlan(answer, repo)).toThrow(message);
  });

  it('refuses a test command without a sandbox to run it in', () => {
    const answer = plan([{ ...t('a', ['src/a.js']), test_command: 'node --test test/a.test.js' }]);
    expect(readPlan(answer, repo)[0]?.test_command).toBe('node --test test/a.test.js');
    expect(() => readPlan(answer, repo, { commands: false })).toThrow(
      'task a: test_command is refused: the tests run without a sandbox here',
    );
  });

  it('lets a task share its dependency’s scope, even through another task', () => {
    const tasks = readPlan(plan([t('a', ['src']), t('b', ['x'], ['a']), t('c', ['src/a.js'], ['b'])]), repo);
    expect(tasks).toHaveLength(3);
  });
});
