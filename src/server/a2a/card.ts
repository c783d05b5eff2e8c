/** keel's A2A agent card: its skills (ask, fix, edit, review), its JSON-RPC endpoint and its bearer auth. */
import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';

const SKILLS = [
  {
    id: 'ask',
    name: 'Ask about the code',
    description: 'Answers a question about the project read-only: where things are, how they work.',
    tags: ['code', 'question', 'read-only'],
    examples: ['Where is the config loaded?', 'What does the gate decide for a shell call?'],
  },
  {
    id: 'fix',
    name: 'Fix, verified',
    description:
      "Runs `keel fix`: the change is made in a snapshot and counts as done only when the project's own tests, as they were, pass with no regressions. Completed means verified; the artifact carries the verdict, the PR text and the diff, and the fix waits on a branch. Not verified is failed, with the report.",
    tags: ['code', 'fix', 'verified'],
    examples: ['Fix the off-by-one in src/range.ts', 'The date parser rejects leap days; fix it'],
  },
  {
    id: 'edit',
    name: 'Edit the working tree',
    description:
      'Edits files inside the project directly to do the task; the answer carries the diff. A write that needs approval stops at input-required: answer "yes" or "no".',
    tags: ['code', 'edit'],
    examples: ['Rename parseArgs to parseArguments', 'Add a --verbose flag to the CLI'],
  },
  {
    id: 'review',
    name: 'Review changes',
    description: "Reviews the project's uncommitted changes (or what the message names) read-only.",
    tags: ['code', 'review', 'read-only'],
    examples: ['Review my uncommitted changes', 'Review src/server for security problems'],
  },
];

/** The card for a server whose JSON-RPC endpoint is `url` (its own /a2a). */
export function agentCard(url: string, version: string): AgentCard {
  return AgentCard.fromJSON({
    name: 'keel',
    description:
      'keel, a local-first coding agent: asks, fixes and reviews code in one project under a gate that decides what may run.',
    version,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION }],
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          description: 'The token `keel serve` prints (KEEL_SERVE_TOKEN), as Authorization: Bearer TOKEN.',
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: SKILLS,
  });
}

/** The skill ids a message may name (metadata `skill`); `ask` when it names none. */
export const SKILL_IDS = SKILLS.map((s) => s.id);
export type SkillId = 'ask' | 'fix' | 'edit' | 'review';
